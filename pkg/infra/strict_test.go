package infra

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type strictTarget struct {
	Enabled bool              `json:"enabled"`
	Name    string            `json:"name"`
	Nested  map[string]string `json:"nested"`
	List    []string          `json:"list"`
}

func TestParseConfigRejectsDuplicateKeysNamingTheLines(t *testing.T) {
	for name, tc := range map[string]struct{ data, want string }{
		"top level":   {"name: a\nenabled: true\nname: b\n", `line 3: duplicate key "name" (first at line 1)`},
		"nested":      {"nested:\n  x: 1\n  y: 2\n  x: 3\n", `line 4: duplicate key "nested.x" (first at line 2)`},
		"json":        {`{"name": "a", "name": "b"}`, `line 1: duplicate key "name"`},
		"in a list":   {"list: [a]\nnested:\n  k: v\n  k: w\n", `line 4: duplicate key "nested.k"`},
		"merge value": {"name: a\n\"name\": b\n", `line 2: duplicate key "name"`},
	} {
		t.Run(name, func(t *testing.T) {
			var out strictTarget
			err := ParseConfig([]byte(tc.data), &out, false, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseConfig = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseConfigRejectsYAML11Booleans(t *testing.T) {
	for _, v := range []string{"off", "on", "yes", "no", "Yes", "NO", "y", "N", "True", "FALSE"} {
		var out strictTarget
		err := ParseConfig([]byte("name: x\nenabled: "+v+"\n"), &out, false, nil)
		if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), v) {
			t.Errorf("enabled: %s: %v, want an error naming line 2 and the value", v, err)
		}
	}
	// JSON booleans and quoted strings are fine.
	var out strictTarget
	if err := ParseConfig([]byte("enabled: true\nname: \"off\"\nlist: ['yes', no-way]\n"), &out, true, nil); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	if !out.Enabled || out.Name != "off" || strings.Join(out.List, ",") != "yes,no-way" {
		t.Errorf("parsed %+v", out)
	}
}

func TestLoadConfigBoundsTheRead(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	c := &ConfigFile{Name: "zero", flagValue: "/dev/zero", Log: quietLogger()}
	var out strictTarget
	start := time.Now()
	_, err := c.LoadConfig(&out)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("LoadConfig(/dev/zero) = %v, want a size error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("LoadConfig(/dev/zero) took %v", d)
	}
	big := filepath.Join(t.TempDir(), "big.conf")
	if err := os.WriteFile(big, []byte("name: "+strings.Repeat("a", MaxConfigFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.flagValue = big
	if _, err := c.LoadConfig(&out); err == nil || !strings.Contains(err.Error(), big) {
		t.Errorf("LoadConfig(big) = %v, want an error naming the file", err)
	}
}
