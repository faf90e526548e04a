package project

import "testing"

func TestCompare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"v0.1.0", "0.1.0", 0},
		{"v0.1.0", "v0.2.0", -1},
		{"v0.10.0", "v0.9.9", 1},
		{"v1.0.0", "v0.99.99", 1},
		{"v0.2.0-rc.1", "v0.2.0", -1},
		{"v0.2.0-0.20261201000000-abcdef123456", "v0.1.9", 1},
		{"v0.2.0+meta", "v0.2.0", 0},
		{"banana", "v0.0.0", -1},
		{"v0.1", "v0.0.0", -1},
		{"", "", 0},
	} {
		if got := Compare(c.a, c.b); got != c.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

const changelog = `# Changelog

Intro.

## [0.3.0] - 2027-02-01

- three

## v0.2.0

- two

## 0.1.0

- one
`

// TestChanges gives the sections after the old version up to the new one.
func TestChanges(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ from, to, want string }{
		{"v0.1.0", "v0.3.0", "## [0.3.0] - 2027-02-01\n\n- three\n\n## v0.2.0\n\n- two"},
		{"v0.1.0", "v0.2.0", "## v0.2.0\n\n- two"},
		{"v0.2.0", "v0.2.0", ""},
		{"v0.3.0", "v0.1.0", ""}, // a downgrade
		{"v0.0.1", "v0.1.0", "## 0.1.0\n\n- one"},
	} {
		if got := Changes([]byte(changelog), c.from, c.to); got != c.want {
			t.Errorf("Changes(%s, %s) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}
