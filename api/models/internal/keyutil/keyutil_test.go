package keyutil

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestNetworkCanonicalisesDestinations(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"10.1.0.0/16", "10.1.0.0/16", true},
		{"10.1.2.3/16", "10.1.0.0/16", true},
		{"0.0.0.0/0", "0.0.0.0/0", true},
		{"10.1.1.1", "10.1.1.1/32", true},
		{"FD00:0:0:1::5/64", "fd00:0:0:1::/64", true},
		{"::/0", "::/0", true},
		{"fd00::5", "fd00::5/128", true},
		{"fe80::1%eth0", "fe80::1%eth0", false},
		{"10.1.0.0/33", "10.1.0.0/33", false},
		{"010.1.0.0/16", "010.1.0.0/16", false},
		{"", "", false},
		{"bogus", "bogus", false},
	}
	for _, tt := range tests {
		got, ok := Network(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Network(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestAddressKeepsHostBits(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"10.1.2.3/16", "10.1.2.3/16", true},
		{"FD00::0001/64", "fd00::1/64", true},
		{"10.1.2.3", "10.1.2.3", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := Address(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Address(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestIPAndMACCanonicalForms(t *testing.T) {
	ipTests := []struct {
		in, want string
		ok       bool
	}{
		{"10.0.0.1", "10.0.0.1", true},
		{"FD00::0001", "fd00::1", true},
		{"10.0.0.1/32", "10.0.0.1/32", false},
		{"fe80::1%eth0", "fe80::1%eth0", false},
		{"", "", false},
	}
	for _, tt := range ipTests {
		got, ok := IP(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("IP(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	macTests := []struct {
		in, want string
		ok       bool
	}{
		{"12:2b:00:00:00:02", "12:2b:00:00:00:02", true},
		{"12-2B-00-00-00-0A", "12:2b:00:00:00:0a", true},
		{"122b.0000.000a", "12:2b:00:00:00:0a", true},
		{"02:00:5e:10:00:00:00:01", "02:00:5e:10:00:00:00:01", false},
		{"12:2b", "12:2b", false},
	}
	for _, tt := range macTests {
		got, ok := MAC(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("MAC(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestUint32AcceptsOnlyPlainDecimals(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"4294967295", 4294967295, true},
		{"4294967296", 0, false},
		{"01", 0, false},
		{"+1", 0, false},
		{"-1", 0, false},
		{"0x1", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := Uint32(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Uint32(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSplittersRequireBothSides(t *testing.T) {
	splitTests := []struct {
		name                string
		split               func(s, sep string) (string, string, bool)
		in                  string
		wantBefore, wantAft string
		wantOK              bool
	}{
		{"last", SplitLast, "a/b/c", "a/b", "c", true},
		{"first", SplitFirst, "a/b/c", "a", "b/c", true},
		{"last with empty end", SplitLast, "a/b/", "", "", false},
		{"first with empty start", SplitFirst, "/a", "", "", false},
		{"last without separator", SplitLast, "abc", "", "", false},
		{"first without separator", SplitFirst, "abc", "", "", false},
	}
	for _, tt := range splitTests {
		t.Run(tt.name, func(t *testing.T) {
			before, after, ok := tt.split(tt.in, "/")
			if before != tt.wantBefore || after != tt.wantAft || ok != tt.wantOK {
				t.Errorf("split(%q) = %q, %q, %v", tt.in, before, after, ok)
			}
		})
	}
	if rest, ok := Rest("p/x", "p/"); !ok || rest != "x" {
		t.Errorf("Rest(p/x) = %q, %v", rest, ok)
	}
	for _, key := range []string{"p/", "q/x", ""} {
		if rest, ok := Rest(key, "p/"); ok {
			t.Errorf("Rest(%q) = %q, want rejection", key, rest)
		}
	}
}

func TestErrorsNameThePackageTheTypeAndTheSentinel(t *testing.T) {
	err := UnknownModel("vpp_l3", wrapperspb.String("x"))
	if !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), "vpp_l3") || !strings.Contains(err.Error(), "google.protobuf.StringValue") {
		t.Errorf("UnknownModel error = %v", err)
	}
	err = InvalidValue("vpp_nat", wrapperspb.String("x"), "empty label")
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "google.protobuf.StringValue: empty label") {
		t.Errorf("InvalidValue error = %v", err)
	}
	if got := MessageName(nil); got != "<nil>" {
		t.Errorf("MessageName(nil) = %q", got)
	}
}
