// hookledger console: times shown in the reader's zone on hover, and copy
// buttons. Everything else is plain HTML from the server.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("time[datetime]").forEach(function (t) {
    var d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d)) t.title = d.toLocaleString();
  });
  document.querySelectorAll("button[data-copy]").forEach(function (b) {
    b.addEventListener("click", function () {
      var src = document.getElementById(b.getAttribute("data-copy"));
      if (!src || !navigator.clipboard) return;
      navigator.clipboard.writeText(src.textContent).then(function () { b.textContent = "Copied"; });
    });
  });
});
