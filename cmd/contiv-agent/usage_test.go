package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestHelpGoesToStdoutAndExitsZero(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		t.Run(arg, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(context.Background(), []string{arg}, &out, &errOut); code != 0 {
				t.Fatalf("exit code %d, want 0", code)
			}
			if errOut.Len() != 0 {
				t.Errorf("stderr is not empty: %q", errOut.String())
			}
			for _, want := range []string{"Usage: contiv-agent [flags]", "make run", "-standalone-demo-pods", "-strict-config", "-contiv-config"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("help on stdout lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestWrongFlagGoesToStderrAndExitsTwo(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-no-such-flag"}, &out, &errOut); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if out.Len() != 0 {
		t.Errorf("stdout is not empty: %q", out.String())
	}
	for _, want := range []string{"flag provided but not defined: -no-such-flag", "Usage: contiv-agent"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
}
