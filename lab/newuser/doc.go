// Package newuser proves that the template's user owns one folder. In a
// scratch copy of the repository, whatever its effect/ holds:
//
//   - a new user deletes the sample effect (testdata/sample, the sample as
//     the template ships it) and adds an effect with a setting of its own
//     and its test (testdata/newuser): the change touches at most three
//     files (the effect, its test and samconfig.toml);
//   - a team's effect of several files and a sub-package, with settings of
//     its own (testdata/team), replaces effect/: the product and the proof
//     lab still vet and build, and every package whose tests link effect/
//     passes, with nothing changed but samconfig.toml's EffectSettings.
//
// Keep testdata/sample in step with effect/ when the sample changes.
package newuser
