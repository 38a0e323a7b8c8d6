package jsonpage

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestWriteStreamsAValidArray(t *testing.T) {
	for _, items := range [][]map[string]int{nil, {{"a": 1}}, {{"a": 1}, {"b": 2}, {"c": 3}}} {
		rec := httptest.NewRecorder()
		if err := Write(rec, items, 7); err != nil {
			t.Fatal(err)
		}
		var got []map[string]int
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("%d items: invalid JSON %q: %v", len(items), rec.Body.String(), err)
		}
		if len(got) != len(items) || rec.Header().Get(MoreHeader) != "7" || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%d items: got %v, headers %v", len(items), got, rec.Header())
		}
	}
}

func TestWriteIndentsLikeAnIndentingMarshal(t *testing.T) {
	items := []map[string]any{{"a": 1, "b": []int{1, 2}}, {"c": "<x>"}}
	rec := httptest.NewRecorder()
	if err := Write(rec, items, 0); err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(items, "", "  ")
	want = []byte(strings.ReplaceAll(string(want), `\u003c`, "<"))
	want = []byte(strings.ReplaceAll(string(want), `\u003e`, ">"))
	if got := rec.Body.String(); got != string(want)+"\n" {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestLimitAndCuts(t *testing.T) {
	for q, want := range map[string]int{"": DefaultLimit, "limit=1": 1, "limit=1000": MaxLimit, "limit=0": -1, "limit=1001": -1, "limit=x": -1} {
		v, _ := url.ParseQuery(q)
		got, err := Limit(v)
		if (want < 0) != (err != nil) || (want > 0 && got != want) {
			t.Errorf("%q: %d, %v; want %d", q, got, err, want)
		}
	}
	items := []int{1, 2, 3, 4, 5}
	if got, left := Oldest(items, 2); len(got) != 2 || got[0] != 1 || left != 3 {
		t.Errorf("Oldest = %v, %d", got, left)
	}
	if got, left := Newest(items, 2); len(got) != 2 || got[1] != 5 || left != 3 {
		t.Errorf("Newest = %v, %d", got, left)
	}
	if got, left := Newest(items, 9); len(got) != 5 || left != 0 {
		t.Errorf("Newest = %v, %d", got, left)
	}
}
