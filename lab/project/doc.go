// Package project proves the project a user starts with sam init: made
// from this checkout's cookiecutter template, requiring this checkout as
// the module version the template names (served by a file module proxy
// built from the working tree, so the project gets what a real download
// gives: the module zip, read-only in the module cache), it vets, tests,
// writes its template.yaml with a resource of its own (template lint
// clean), and deploys with make local into MiniStack with IAM enforced,
// where a signed event is processed by the project's own effect with the
// project's own setting.
//
// Its helpers (Proxy, Init, Env) let a test generate a project at one
// version and upgrade it to another with the same commands.
package project
