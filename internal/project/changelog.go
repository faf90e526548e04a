package project

import (
	"cmp"
	"strconv"
	"strings"
)

// Changes returns the sections of a changelog (headed "## 0.2.0",
// "## v0.2.0" or "## [0.2.0] - date") of the versions after from, up to
// and including to, newest first as the changelog lists them; "" when
// there are none (a downgrade, or the same version).
func Changes(changelog []byte, from, to string) string {
	var out strings.Builder
	keep := false
	for _, line := range strings.SplitAfter(string(changelog), "\n") {
		if strings.HasPrefix(line, "## ") {
			v := strings.Fields(strings.Trim(line[3:], " \t\r\n"))
			keep = len(v) > 0 && Compare(strings.Trim(v[0], "[]"), from) > 0 && Compare(strings.Trim(v[0], "[]"), to) <= 0
		} else if strings.HasPrefix(line, "# ") {
			keep = false
		}
		if keep {
			out.WriteString(line)
		}
	}
	return strings.TrimSpace(out.String())
}

// Compare orders two semantic versions, with or without their leading v:
// -1, 0 or +1. A pre-release (v0.2.0-rc.1, a pseudo-version) comes before
// its release; build metadata is ignored. A string that is not a version
// comes before every version.
func Compare(a, b string) int {
	pa, oka := parse(a)
	pb, okb := parse(b)
	if !oka || !okb {
		return boolCmp(oka, okb)
	}
	for i := range 3 {
		if c := cmp.Compare(pa.n[i], pb.n[i]); c != 0 {
			return c
		}
	}
	switch {
	case pa.pre == pb.pre:
		return 0
	case pa.pre == "":
		return 1
	case pb.pre == "":
		return -1
	}
	return strings.Compare(pa.pre, pb.pre)
}

type semver struct {
	n   [3]int
	pre string
}

func parse(v string) (semver, bool) {
	var s semver
	v = strings.TrimPrefix(v, "v")
	v, _, _ = strings.Cut(v, "+")
	v, s.pre, _ = strings.Cut(v, "-")
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return s, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return s, false
		}
		s.n[i] = n
	}
	return s, true
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
