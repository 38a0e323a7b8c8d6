package infra

import (
	"errors"
	"fmt"

	yaml3 "go.yaml.in/yaml/v3"
)

// yaml11Booleans are the plain scalars that YAML 1.1 (and so the YAML-to-JSON conversion
// of sigs.k8s.io/yaml) reads as booleans although JSON does not: "off" silently became
// false. Configuration files must write true or false, or quote the word for a string.
var yaml11Booleans = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true,
	"on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true,
	"True": true, "TRUE": true, "False": true, "FALSE": true,
}

// CheckStrictYAML reports what the lenient YAML-to-JSON conversion would silently accept:
// a key given twice in one mapping (the last would win) and a value written as a YAML
// 1.1 boolean other than true and false. Every problem names its line; all are joined.
// Only the first document of data is looked at, as the conversion reads only that one.
func CheckStrictYAML(data []byte) error {
	var doc yaml3.Node
	if err := yaml3.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	var errs []error
	checkNode(&doc, "", &errs)
	return errors.Join(errs...)
}

// maxStrictErrors bounds the problems reported for one file.
const maxStrictErrors = 20

func checkNode(n *yaml3.Node, path string, errs *[]error) {
	if n == nil || len(*errs) >= maxStrictErrors {
		return
	}
	switch n.Kind {
	case yaml3.DocumentNode, yaml3.SequenceNode:
		for i, c := range n.Content {
			p := path
			if n.Kind == yaml3.SequenceNode {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			checkNode(c, p, errs)
		}
	case yaml3.MappingNode:
		first := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml3.ScalarNode && k.Value != "<<" {
				if line, dup := first[k.Value]; dup {
					*errs = append(*errs, fmt.Errorf("line %d: duplicate key %q (first at line %d)", k.Line, joinPath(path, k.Value), line))
				} else {
					first[k.Value] = k.Line
				}
			}
			checkNode(v, joinPath(path, k.Value), errs)
		}
	case yaml3.ScalarNode:
		if n.Style&(yaml3.SingleQuotedStyle|yaml3.DoubleQuotedStyle|yaml3.LiteralStyle|yaml3.FoldedStyle|yaml3.TaggedStyle) == 0 &&
			yaml11Booleans[n.Value] {
			*errs = append(*errs, fmt.Errorf("line %d: %s: %q is a YAML 1.1 boolean: write true or false, or quote it for a string",
				n.Line, orTop(path), n.Value))
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "value"
	}
	return path
}
