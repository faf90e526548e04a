// Package newuser proves that the template's user owns one folder: a new
// user deletes the sample effect, adds an effect with a setting of its own
// and its test, and the change touches at most three files (the effect, its
// test and samconfig.toml), while the product still builds, vets and lints,
// and the proof lab, which never reads effect/, builds unchanged.
package newuser
