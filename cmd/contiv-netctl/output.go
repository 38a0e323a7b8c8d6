package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Output formats of -o.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

func validFormat(f string) error {
	switch f {
	case formatTable, formatJSON, formatYAML:
		return nil
	}
	return fmt.Errorf("-o: %q is not table, json or yaml", f)
}

// table is the tabular rendering of a result.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// render writes data as JSON or YAML, or its table (text, for free-form output such
// as VPP CLI, is written as is).
func render(w io.Writer, format string, data any, tbl func() *table, text func() string) error {
	switch format {
	case formatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(data)
	case formatYAML:
		out, err := yaml.Marshal(data)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	if text != nil {
		s := text()
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		_, err := io.WriteString(w, s)
		return err
	}
	return tbl().write(w)
}

// orDash shows an empty cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
