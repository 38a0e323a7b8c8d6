package pod

import (
	"fmt"
	"strings"
)

// Kubernetes bounds on object names (apimachinery's validation rules).
const (
	// MaxNameLength is the longest pod name: a DNS-1123 subdomain.
	MaxNameLength = 253
	// MaxNamespaceLength is the longest namespace name: a DNS-1123 label.
	MaxNamespaceLength = 63
)

// Validate checks the ID against Kubernetes' name rules: the name is a DNS-1123
// subdomain (lowercase letters, digits, '-' and '.', at most 253 characters, starting
// and ending with a letter or digit), the namespace a DNS-1123 label (the same without
// '.', at most 63 characters). The error names the field and the value (shortened).
func (id ID) Validate() error {
	if err := checkDNS1123(id.Name, MaxNameLength, true); err != nil {
		return fmt.Errorf("pod name %s: %w", quoteShort(id.Name), err)
	}
	if err := checkDNS1123(id.Namespace, MaxNamespaceLength, false); err != nil {
		return fmt.Errorf("pod namespace %s: %w", quoteShort(id.Namespace), err)
	}
	return nil
}

// checkDNS1123 checks a DNS-1123 label (dots false) or subdomain (dots true).
func checkDNS1123(s string, maxLen int, dots bool) error {
	switch {
	case s == "":
		return fmt.Errorf("empty")
	case len(s) > maxLen:
		return fmt.Errorf("%d characters, at most %d allowed", len(s), maxLen)
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	for _, label := range splitLabels(s, dots) {
		if label == "" || !alnum(label[0]) || !alnum(label[len(label)-1]) {
			return fmt.Errorf("must consist of lowercase letters, digits and '-'%s, each part starting and ending with a letter or digit",
				map[bool]string{true: " separated by '.'", false: ""}[dots])
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !alnum(c) && c != '-' {
				return fmt.Errorf("character %q at %d is not allowed (lowercase letters, digits, '-'%s)",
					c, strings.Index(s, label)+i, map[bool]string{true: ", '.'", false: ""}[dots])
			}
		}
	}
	return nil
}

func splitLabels(s string, dots bool) []string {
	if !dots {
		return []string{s}
	}
	return strings.Split(s, ".")
}

// quoteShort quotes s, cut to 64 bytes so that a hostile value does not flood a log.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q... (%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}
