// Package jsonpage serves bounded pages of long lists (the controller's event history,
// the scheduler's transaction history) as JSON arrays written one element at a time:
// the memory a request costs is one element's encoding plus the page's pointers, never
// the whole answer. It knows nothing of what the elements are; the callers select them.
package jsonpage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// DefaultLimit is the page size when ?limit= is not given; MaxLimit bounds it.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// MoreHeader is set on an answer that was cut at the page size; its value is the
// number of selected elements left out.
const MoreHeader = "X-Contiv-More"

// Limit reads ?limit= (default DefaultLimit, at most MaxLimit).
func Limit(q url.Values) (int, error) {
	s := q.Get("limit")
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, fmt.Errorf("limit: %q is not a number between 1 and %d", s, MaxLimit)
	}
	return n, nil
}

// Oldest cuts items to its first limit elements; Newest to its last limit elements.
// Both return how many were left out.
func Oldest[T any](items []T, limit int) ([]T, int) {
	if len(items) <= limit {
		return items, 0
	}
	return items[:limit], len(items) - limit
}

// Newest cuts items to its last limit elements and returns how many were left out.
func Newest[T any](items []T, limit int) ([]T, int) {
	if len(items) <= limit {
		return items, 0
	}
	return items[len(items)-limit:], len(items) - limit
}

// Write answers 200 with items as an indented JSON array, encoding one element at a
// time straight to w; left is the number of selected elements cut off (MoreHeader).
// An element that fails to encode ends the answer early (the status is already sent),
// which the client sees as invalid JSON.
func Write[T any](w http.ResponseWriter, items []T, left int) error {
	w.Header().Set("Content-Type", "application/json")
	if left > 0 {
		w.Header().Set(MoreHeader, strconv.Itoa(left))
	}
	w.WriteHeader(http.StatusOK)
	if len(items) == 0 {
		_, err := w.Write([]byte("[]\n"))
		return err
	}
	// One element at a time through a buffer reused for each (its size is the largest
	// element's), so that the separators sit where an indenting marshal puts them.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	sep := "[\n  "
	for i, it := range items {
		buf.Reset()
		buf.WriteString(sep)
		if err := enc.Encode(it); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		sep = ",\n  "
	}
	_, err := w.Write([]byte("\n]\n"))
	return err
}
