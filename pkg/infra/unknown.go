package infra

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// UnknownKeys lists, with their full dotted paths, the keys of the JSON document data
// that no field of out (a pointer to a struct) would receive. Matching follows
// encoding/json: the JSON tag name (or the field name without a tag), case-insensitive,
// embedded structs flattened. Lists are walked element by element and reported with an
// index ("nodeConfig[1].gatway"); maps accept any key.
func UnknownKeys(data []byte, out any) ([]string, error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	t := reflect.TypeOf(out)
	if t == nil {
		return nil, fmt.Errorf("config target is nil")
	}
	var unknown []string
	walkUnknown(doc, t, "", &unknown)
	sort.Strings(unknown)
	return unknown, nil
}

func walkUnknown(doc any, t reflect.Type, path string, unknown *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		// The type parses itself; its keys are its own business.
		return
	}
	switch v := doc.(type) {
	case map[string]any:
		if t.Kind() != reflect.Struct {
			// Maps and interface{} targets take any key; type mismatches are left to
			// the decoder, which reports them with a better message.
			if t.Kind() == reflect.Map {
				for k, child := range v {
					walkUnknown(child, t.Elem(), joinKey(path, k), unknown)
				}
			}
			return
		}
		fields := jsonFields(t)
		for k, child := range v {
			ft, ok := lookupField(fields, k)
			if !ok {
				*unknown = append(*unknown, joinKey(path, k))
				continue
			}
			walkUnknown(child, ft, joinKey(path, k), unknown)
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return
		}
		for i, child := range v {
			walkUnknown(child, t.Elem(), fmt.Sprintf("%s[%d]", path, i), unknown)
		}
	}
}

var jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// lookupField finds the field for a JSON key: exact name first, then case-insensitive,
// as encoding/json does.
func lookupField(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if ft, ok := fields[key]; ok {
		return ft, true
	}
	for name, ft := range fields {
		if strings.EqualFold(name, key) {
			return ft, true
		}
	}
	return nil, false
}

// jsonFields maps the JSON names of a struct's fields (embedded structs flattened) to
// their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, taken := fields[k]; !taken {
						fields[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}
