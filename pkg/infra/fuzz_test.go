package infra

import (
	"testing"
)

// fuzzTarget has the shapes configuration structs have: scalars, nested structs, maps,
// lists and a duration.
type fuzzTarget struct {
	Name     string            `json:"name"`
	Enabled  bool              `json:"enabled"`
	Count    int               `json:"count"`
	Size     uint16            `json:"size"`
	Ratio    float64           `json:"ratio"`
	Timeout  Duration          `json:"timeout"`
	Labels   map[string]string `json:"labels"`
	Items    []string          `json:"items"`
	Children []struct {
		Key   string `json:"key"`
		Value int    `json:"value"`
	} `json:"children"`
	Nested struct {
		Deep struct {
			Flag bool `json:"flag"`
		} `json:"deep"`
	} `json:"nested"`
}

// FuzzParseConfig feeds arbitrary bytes to the configuration parser of every plugin's
// file: it must return a value or an error, never panic or hang.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"name: a\nenabled: true\ncount: 3\n",
		"labels: {a: b}\nitems: [x, y]\nchildren: [{key: k, value: 1}]\n",
		"nested:\n  deep:\n    flag: false\ntimeout: 5s\n",
		`{"name": "a", "ratio": 1.5, "timeout": 1000}`,
		"name: a\nname: b\n",
		"enabled: off\n",
		"a: &x [1, 2]\nb: *x\n",
		"- 1\n- 2\n",
		"---\nname: a\n---\nname: b\n",
		"",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		var out fuzzTarget
		_ = ParseConfig(data, &out, strict, nil)
		_ = CheckStrictYAML(data)
	})
}
