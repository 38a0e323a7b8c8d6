package infra

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

type sampleInner struct {
	Name  string `json:"name"`
	Level int    `json:"level"`
}

type sampleEmbedded struct {
	Flattened bool `json:"flattened"`
}

type sampleConfig struct {
	sampleEmbedded
	Enabled  bool              `json:"enabled"`
	Endpoint string            `json:"endpoint"`
	Inner    sampleInner       `json:"inner"`
	List     []sampleInner     `json:"list"`
	Labels   map[string]string `json:"labels"`
	NoTag    string
	Skipped  string `json:"-"`
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{name: "all known", doc: `{"enabled":true,"endpoint":"x","inner":{"name":"a"},"flattened":true,"NoTag":"y"}`},
		{name: "case is forgiving like encoding/json", doc: `{"ENABLED":true,"Inner":{"NAME":"a"},"notag":"x"}`},
		{name: "map keys are free", doc: `{"labels":{"anything":"goes"}}`},
		{name: "top-level typo", doc: `{"endpont":"x"}`, want: []string{"endpont"}},
		{name: "nested typo", doc: `{"inner":{"nmae":"a","level":1}}`, want: []string{"inner.nmae"}},
		{name: "list element typo", doc: `{"list":[{"name":"a"},{"lvl":2}]}`, want: []string{"list[1].lvl"}},
		{name: "ignored field counts as unknown", doc: `{"Skipped":"x"}`, want: []string{"Skipped"}},
		{name: "several, sorted", doc: `{"zz":1,"aa":2}`, want: []string{"aa", "zz"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UnknownKeys([]byte(tc.doc), &sampleConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("UnknownKeys = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseConfigKeepsDefaultsAndReportsUnknownKeys(t *testing.T) {
	yamlDoc := "endpoint: 0.0.0.0:9999\ninner:\n  name: x\nendpont: typo\n"
	t.Run("lenient warns and keeps defaults", func(t *testing.T) {
		var logs bytes.Buffer
		log := logrus.New()
		log.SetOutput(&logs)
		cfg := sampleConfig{Enabled: true, Inner: sampleInner{Level: 3}}
		if err := ParseConfig([]byte(yamlDoc), &cfg, false, log); err != nil {
			t.Fatal(err)
		}
		if !cfg.Enabled || cfg.Inner.Level != 3 || cfg.Inner.Name != "x" || cfg.Endpoint != "0.0.0.0:9999" {
			t.Errorf("parsed config = %+v", cfg)
		}
		if !strings.Contains(logs.String(), "unknown configuration key ignored") || !strings.Contains(logs.String(), "key=endpont") {
			t.Errorf("no warning naming the unknown key, logs: %s", logs.String())
		}
	})
	t.Run("strict fails naming the key", func(t *testing.T) {
		var cfg sampleConfig
		err := ParseConfig([]byte(yamlDoc), &cfg, true, nil)
		if err == nil || err.Error() != "unknown keys: endpont" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("wrong type", func(t *testing.T) {
		var cfg sampleConfig
		err := ParseConfig([]byte("enabled: [1]\n"), &cfg, false, nil)
		if err == nil || !strings.Contains(err.Error(), "invalid value") || !strings.Contains(err.Error(), "enabled") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("broken yaml", func(t *testing.T) {
		var cfg sampleConfig
		err := ParseConfig([]byte("enabled: : :\n  - x"), &cfg, false, nil)
		if err == nil || !strings.Contains(err.Error(), "not valid YAML") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestConfigFileResolution(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fromFlag := write("flag.conf", "endpoint: from-flag\n")
	fromEnv := write("env.conf", "endpoint: from-env\n")
	confDir := filepath.Join(dir, "etc")
	if err := os.Mkdir(confDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "http.conf"), []byte("endpoint: from-dir\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.conf")

	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		want      string
		wantFound bool
		wantErr   string
	}{
		{name: "flag wins over env", args: []string{"-http-config=" + fromFlag},
			env: map[string]string{"HTTP_CONFIG": fromEnv}, want: "from-flag", wantFound: true},
		{name: "env when no flag", env: map[string]string{"HTTP_CONFIG": fromEnv}, want: "from-env", wantFound: true},
		{name: "default file in CONFIG_DIR", env: map[string]string{"CONFIG_DIR": confDir}, want: "from-dir", wantFound: true},
		{name: "missing default file means defaults", env: map[string]string{"CONFIG_DIR": dir}, want: "default"},
		{name: "missing file named by flag is an error", args: []string{"-http-config=" + missing},
			wantErr: "http config: open " + missing},
		{name: "missing file named by env is an error", env: map[string]string{"HTTP_CONFIG": missing},
			wantErr: "http config: open " + missing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			c := NewConfigFile(fs, "http")
			c.lookupEnv = func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg := sampleConfig{Endpoint: "default"}
			found, err := c.LoadConfig(&cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if found != tc.wantFound || cfg.Endpoint != tc.want {
				t.Errorf("found=%v endpoint=%q, want found=%v endpoint=%q", found, cfg.Endpoint, tc.wantFound, tc.want)
			}
		})
	}
}

func TestConfigFileNames(t *testing.T) {
	c := NewConfigFile(nil, "linux-ifplugin")
	if c.FlagName() != "linux-ifplugin-config" || c.EnvName() != "LINUX_IFPLUGIN_CONFIG" {
		t.Errorf("flag %q env %q", c.FlagName(), c.EnvName())
	}
}

func TestConfigFileStrictErrorNamesFileAndKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.conf")
	if err := os.WriteFile(p, []byte("endpoint: a\nbogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c := NewConfigFile(fs, "x")
	c.Strict = true
	if err := fs.Parse([]string{"-x-config", p}); err != nil {
		t.Fatal(err)
	}
	_, err := c.LoadConfig(&sampleConfig{})
	want := "x config " + p + ": unknown keys: bogus"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestStaticConfigFillsTheTarget(t *testing.T) {
	cfg := sampleConfig{Enabled: true}
	found, err := StaticConfig{"endpoint": "127.0.0.1:2379", "inner": map[string]any{"level": 2}}.LoadConfig(&cfg)
	if err != nil || !found {
		t.Fatalf("found=%v err=%v", found, err)
	}
	if cfg.Endpoint != "127.0.0.1:2379" || cfg.Inner.Level != 2 || !cfg.Enabled {
		t.Errorf("cfg = %+v", cfg)
	}
	if _, err := (StaticConfig{"endpoints": "x"}).LoadConfig(&cfg); err == nil || err.Error() != "static config: unknown keys: endpoints" {
		t.Errorf("typo accepted: %v", err)
	}
}
