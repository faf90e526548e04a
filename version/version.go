// Package version is hookledger's version, in one place. The module is
// tagged "v" + Version; a project made with sam init requires it at that
// version, and hookledger upgrade moves it to another.
package version

// Version is this release, by semantic versioning: below 1.0 a minor
// release may change the API or the template, and CHANGELOG.md says how.
const Version = "0.2.0"
