package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestVersionFlag: "parsec --version" prints what "parsec version" prints.
func TestVersionFlag(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		root := newRootCommand()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("parsec %s: %v (%s)", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	sub, flag := run("version"), run("--version")
	if !strings.HasPrefix(sub, "parsec ") || !strings.Contains(sub, "wire protocol") {
		t.Fatalf("parsec version printed %q", sub)
	}
	if flag != sub {
		t.Fatalf("parsec --version printed %q, parsec version %q", flag, sub)
	}
}
