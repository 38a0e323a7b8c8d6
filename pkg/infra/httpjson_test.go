package infra

import (
	"net/http/httptest"
	"testing"
)

func TestWriteJSONIsIndentedAndReadable(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, 400, "<value> & more")
	if got := rec.Body.String(); rec.Code != 400 || got != "{\n  \"error\": \"<value> & more\"\n}\n" ||
		rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("%d %q %q", rec.Code, got, rec.Header().Get("Content-Type"))
	}
}
