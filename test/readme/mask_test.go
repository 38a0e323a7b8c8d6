package readme

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Directives of <!-- tour-test: ... --> comments.
const (
	directiveRetry = "retry"
	directiveOneOf = "each output line is one of those shown"
)

// masks replace what differs from run to run with a fixed text.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d:\d{6}\b`), "HH:MM:SS:USECS"},                 // trace times
	{regexp.MustCompile(`\b([0-9a-f]{2}:){5}[0-9a-f]{2}\b`), "MAC"},                    // generated MACs
	{regexp.MustCompile(`\bfe80::[0-9a-f:]+/64\b`), "fe80::LINK-LOCAL/64"},             // from the MACs
	{regexp.MustCompile(`(\d+\.\d+\.\d+\.\d+):(3[2-9]\d{3}|[4-6]\d{4})\b`), "$1:PORT"}, // ephemeral ports
}

// counterColumn is where VPP's `show interface` prints its counters, which vary.
const counterColumn = 68

// mask normalises an output for the comparison: the masks above, the counters of
// `show interface` left out, trailing blanks removed (editors strip them).
func mask(out string) string {
	counters := strings.Contains(out, "Counter          Count")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if counters && len(l) > counterColumn {
			if strings.TrimSpace(l[:counterColumn]) == "" {
				continue // a counter of the interface above
			}
			l = l[:counterColumn]
		}
		for _, m := range masks {
			l = m.re.ReplaceAllString(l, m.with)
		}
		lines = append(lines, strings.TrimRight(l, " \t"))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// matches compares an output with the README's, as the directive says.
func matches(directive, want, got string) bool {
	want, got = mask(want), mask(got)
	if directive != directiveOneOf {
		return want == got
	}
	wantLines, gotLines := strings.Split(want, "\n"), strings.Split(got, "\n")
	if len(wantLines) != len(gotLines) {
		return false
	}
	for _, l := range gotLines {
		if !slices.Contains(wantLines, l) {
			return false
		}
	}
	return true
}

func TestMaskHidesWhatVariesAndKeepsTheRest(t *testing.T) {
	a := "00:00:11:642962: virtio-input\n  tx tap1: 02:fe:2b:ef:88:58 -> 02:fe:d4:10:77:a7 ttl 63\n" +
		"  10.1.1.4:35960 -> 10.1.1.2:80 fib 1\neth0  UNKNOWN  10.1.1.5/32 fe80::fe:6fff:fe2d:b9d2/64 \n"
	b := "00:00:41:683603: virtio-input\n  tx tap1: 02:fe:11:22:33:44 -> 02:fe:55:66:77:88 ttl 63\n" +
		"  10.1.1.4:40001 -> 10.1.1.2:80 fib 1\neth0  UNKNOWN  10.1.1.5/32 fe80::fe:1ff:fe2:3/64"
	if mask(a) != mask(b) {
		t.Errorf("masked outputs differ:\n%s\n---\n%s", mask(a), mask(b))
	}
	for _, c := range []string{strings.Replace(b, "ttl 63", "ttl 62", 1), strings.Replace(b, ":80 fib", ":8080 fib", 1),
		strings.Replace(b, "tap1", "tap2", 1)} {
		if mask(a) == mask(c) {
			t.Errorf("a change outside the masks is hidden:\n%s", c)
		}
	}
}

func TestMaskDropsTheCountersOfShowInterface(t *testing.T) {
	head := "              Name               Idx   State   MTU (L3/IP4/IP6/MPLS)    Counter          Count      \n"
	a := head + "tap0                              2      up         1450/0/0/0      rx packets                     8\n" +
		"                                                                    drops                          8\n" +
		"vxlan_tunnel0                     3      up         9000/0/0/0      \n"
	b := head + "tap0                              2      up         1450/0/0/0      \n" +
		"vxlan_tunnel0                     3      up         9000/0/0/0      tx packets                     6\n"
	if mask(a) != mask(b) {
		t.Errorf("masked outputs differ:\n%s\n---\n%s", mask(a), mask(b))
	}
	if c := strings.Replace(b, "  up  ", " down ", 1); mask(a) == mask(c) {
		t.Error("a changed interface state is hidden")
	}
}

func TestEachLineOneOfAcceptsAnyMixOfTheShownLinesOnly(t *testing.T) {
	want := "web-1\nno answer (curl exit 28)\nweb-1"
	for got, ok := range map[string]bool{
		"web-1\nweb-1\nweb-1": true,
		"no answer (curl exit 28)\nno answer (curl exit 28)\nweb-1": true,
		"web-1\nweb-2\nweb-1":                   false,
		"web-1\nweb-1":                          false,
		"web-1\nno answer (curl exit 7)\nweb-1": false,
	} {
		if matches(directiveOneOf, want, got) != ok {
			t.Errorf("matches(%q) = %v, want %v", got, !ok, ok)
		}
	}
}
