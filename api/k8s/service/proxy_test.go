package service

import "testing"

func TestOtherProxyLabel(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{nil, ""},
		{map[string]string{"app": "web"}, ""},
		{map[string]string{LabelServiceProxyName: ""}, LabelServiceProxyName},
		{map[string]string{LabelHeadless: "", "app": "web"}, LabelHeadless},
	} {
		got, ok := OtherProxyLabel(&Service{Labels: tc.labels})
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("labels %v: %q %v, want %q", tc.labels, got, ok, tc.want)
		}
	}
}
