// Package pbjson is a fast decoder for the subset of protobuf JSON that contiv-ksr writes
// to etcd (dbresources.Marshal): objects of proto3 messages whose fields are strings,
// bools, int32, int64, uint32 (and their sint/sfixed/fixed variants), open enums, nested
// messages, repeated strings, repeated messages and map<string, string>.
//
// It is not a JSON library and not a replacement for protojson. Its one contract:
//
//	v, err := dec.Decode(data)
//	err == nil  =>  protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(data, w)
//	                succeeds and proto.Equal(v, w)
//
// Anything outside its fast path makes Decode return an error wrapping ErrFallback instead
// of a value, and the caller decodes the same bytes with protojson, which then gives the
// value or the authoritative error. Decode never reports a syntax error of its own as
// the answer: its errors only say "not here". Refused (examples, all decided before any
// value is returned):
//
//   - invalid JSON of any kind, empty input, data after the top-level object, nesting
//     deeper than maxDepth;
//   - a field given twice (by either of its names), an extension name "[...]";
//   - strings with invalid UTF-8, raw control characters or escapes other than the JSON
//     ones (\" \\ \/ \b \f \n \r \t \uXXXX, surrogate pairs well formed);
//   - integers in any form other than -?(0|[1-9][0-9]*), bare or quoted, or out of the
//     range of the field (exponents and fractions such as 1e2 or 1.0, which protojson
//     accepts, are left to it);
//   - null where protojson does not skip it (inside lists and maps);
//   - fields of kinds the tables do not cover: uint64, bytes, float, double, groups,
//     repeated scalars other than strings, oneofs, proto3 optional, maps other than
//     map<string, string>, messages of package google.protobuf (the well-known types),
//     fields with explicit presence, required fields, closed enums; Go types that are
//     not protoc-gen-go structs do not compile at all.
//
// Unknown fields are skipped after checking that their value is valid JSON (strict RFC
// 8259, a subset of what protojson's tokenizer takes). Enum names unknown to the schema
// leave the field unset, as protojson does with DiscardUnknown.
//
// How it is fast: the field tables of each message type (JSON name and proto name to the
// field, the field's kind and its Go struct field) are compiled once per Decoder; decoding
// is one pass over the bytes that writes the generated Go structs through reflect (no
// protoreflect.Value boxing), strings are copied once, and repeated message fields get
// one backing array per list ([]T, the elements decoded in a reusable scratch list and
// copied out once the count is known) plus an exact-size []*T. Per-call scratch comes
// from a sync.Pool owned by the Decoder, so a Decoder is safe for concurrent use.
package pbjson
