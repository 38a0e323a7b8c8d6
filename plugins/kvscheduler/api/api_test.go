package api

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestContextOptionsRoundTrip(t *testing.T) {
	ctx := context.Background()
	if k, v := IsResync(ctx); k != NotResync || v {
		t.Fatalf("IsResync on a bare context = %v %v", k, v)
	}
	if _, ok := IsWithRetry(ctx); ok || IsWithRevert(ctx) {
		t.Fatal("options found on a bare context")
	}
	if _, ok := IsWithDescription(ctx); ok {
		t.Fatal("description found on a bare context")
	}
	ctx = WithResync(ctx, DownstreamResync, true)
	ctx = WithRetry(ctx, 3*time.Second, 4, true)
	ctx = WithRevert(ctx)
	ctx = WithDescription(ctx, "node 2 joined")
	if k, v := IsResync(ctx); k != DownstreamResync || !v {
		t.Fatalf("IsResync = %v %v", k, v)
	}
	if o, ok := IsWithRetry(ctx); !ok || o != (RetryOpt{Period: 3 * time.Second, MaxCount: 4, ExpBackoff: true}) {
		t.Fatalf("IsWithRetry = %+v %v", o, ok)
	}
	if !IsWithRevert(ctx) {
		t.Fatal("IsWithRevert = false")
	}
	if d, ok := IsWithDescription(ctx); !ok || d != "node 2 joined" {
		t.Fatalf("IsWithDescription = %q %v", d, ok)
	}
}

func TestEnumNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{StateNonexistent.String(), "NONEXISTENT"},
		{StateRetrying.String(), "RETRYING"},
		{ValueState(99).String(), "ValueState(99)"},
		{OpRecreate.String(), "RECREATE"},
		{FromSB.String(), "FROM_SB"},
		{FullResync.String(), "FULL"},
		{RetryFailedOps.String(), "RETRY"},
		{CachedView.String(), "cached"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, s := range []string{"NB", "sb", "Cached"} {
		v, err := ParseView(s)
		if err != nil || !strings.EqualFold(v.String(), s) {
			t.Errorf("ParseView(%q) = %v, %v", s, v, err)
		}
	}
	if _, err := ParseView("graph"); err == nil {
		t.Error("ParseView accepted an unknown view")
	}
}

type codeErr struct{ code int }

func (e *codeErr) Error() string { return "code" }

func TestTransactionErrorUnwrapsEveryFailure(t *testing.T) {
	sentinel := errors.New("sentinel")
	te := &TransactionError{SeqNum: 7, KVErrors: []KeyWithError{
		{Key: "a", Operation: OpCreate, Error: sentinel},
		{Key: "b", Operation: OpDelete, Error: &codeErr{code: 42}},
		{Key: "a", Operation: OpUpdate, Error: NewInvalidValueError(errors.New("bad mtu"), "mtu")},
	}}
	var err error = te
	if !errors.Is(err, sentinel) {
		t.Error("errors.Is misses a KV error")
	}
	var ce *codeErr
	if !errors.As(err, &ce) || ce.code != 42 {
		t.Error("errors.As misses a KV error")
	}
	var ive *InvalidValueError
	if !errors.As(err, &ive) || ive.InvalidFields[0] != "mtu" {
		t.Error("errors.As misses the InvalidValueError")
	}
	if keys := te.FailedKeys(); strings.Join(keys, ",") != "a,b" {
		t.Errorf("FailedKeys = %v", keys)
	}
	msg := te.Error()
	for _, frag := range []string{"#7", "[CREATE a: sentinel]", "[DELETE b: code]", "fields mtu"} {
		if !strings.Contains(msg, frag) {
			t.Errorf("Error() %q lacks %q", msg, frag)
		}
	}
	wrapped := &TransactionError{TxnError: ErrCombinedDownstreamResyncWithChange}
	if !errors.Is(wrapped, ErrCombinedDownstreamResyncWithChange) {
		t.Error("errors.Is misses TxnError")
	}
}

func TestRecordedTxnJSONUsesProtoJSON(t *testing.T) {
	r := &RecordedTxn{SeqNum: 3, TxnType: NBTransaction, ResyncType: FullResync,
		Values: []RecordedKVPair{{Key: "k", Value: wrapperspb.UInt32(5), Origin: FromNB}},
		Executed: []RecordedOp{{Key: "k", Operation: OpUpdate, Value: wrapperspb.UInt32(5),
			PrevValue: wrapperspb.UInt32(4), PrevState: StateConfigured, NewState: StateConfigured, IsRevert: true}},
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		TxnType    string `json:"txnType"`
		ResyncType string `json:"resyncType"`
		Values     []struct {
			Key    string `json:"key"`
			Value  int    `json:"value"`
			Origin string `json:"origin"`
		} `json:"values"`
		Executed []struct {
			Operation string `json:"operation"`
			Value     int    `json:"value"`
			PrevValue int    `json:"prevValue"`
			NewState  string `json:"newState"`
			IsRevert  bool   `json:"isRevert"`
		} `json:"executed"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
	if back.TxnType != "NB" || back.ResyncType != "FULL" || back.Values[0].Value != 5 || back.Values[0].Origin != "FROM_NB" {
		t.Fatalf("decoded %+v from %s", back, data)
	}
	if op := back.Executed[0]; op.Operation != "UPDATE" || op.Value != 5 || op.PrevValue != 4 || op.NewState != "CONFIGURED" || !op.IsRevert {
		t.Fatalf("decoded op %+v from %s", op, data)
	}
}

func TestAnyOfMatches(t *testing.T) {
	a := AnyOfDependency{KeyPrefixes: []string{"vpp/interface/", "linux/interface/"},
		KeySelector: func(k string) bool { return strings.HasSuffix(k, "/up") }}
	tests := map[string]bool{
		"vpp/interface/tap1/up":   true,
		"linux/interface/veth/up": true,
		"vpp/interface/tap1/down": false,
		"vpp/route/x/up":          false,
	}
	for k, want := range tests {
		if got := a.Matches(k); got != want {
			t.Errorf("Matches(%q) = %v", k, got)
		}
	}
	if !(AnyOfDependency{}).Matches("anything") {
		t.Error("empty AnyOf should match every key")
	}
}

func TestSummaryCountsWhatItLeavesOut(t *testing.T) {
	rec := &RecordedTxn{SeqNum: 3, TxnType: NBTransaction}
	for i := 0; i < 5; i++ {
		k := "config/k" + strconv.Itoa(i)
		rec.Values = append(rec.Values, RecordedKVPair{Key: k})
		rec.Executed = append(rec.Executed, RecordedOp{Key: k, Operation: OpDelete})
	}
	short := rec.Summary(2)
	if strings.Count(short, "DELETE") != 2 || strings.Count(short, "... and 3 more") != 2 {
		t.Errorf("Summary(2) =\n%s", short)
	}
	if full := rec.String(); strings.Count(full, "DELETE") != 5 || strings.Contains(full, "more") {
		t.Errorf("String() =\n%s", full)
	}
}

func TestSummaryCutsLongValues(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes, 2 per rune
	rec := &RecordedTxn{SeqNum: 7, TxnType: NBTransaction, Values: []RecordedKVPair{
		{Key: "config/short", Value: wrapperspb.String("tap1")},
		{Key: "config/long", Value: wrapperspb.String(long)},
	}}
	short := rec.Summary(50)
	if !strings.Contains(short, `config/short = value:"tap1"`) {
		t.Errorf("short value changed:\n%s", short)
	}
	line := short[strings.Index(short, "config/long = "):]
	line = line[:strings.IndexByte(line, '\n')]
	if !strings.HasSuffix(line, "(more: GET /scheduler/txn-history?seq-num=7)") || len(line) > 700 {
		t.Errorf("long value not cut (%d bytes): %s", len(line), line)
	}
	if !utf8.ValidString(line) {
		t.Errorf("cut inside a rune: %q", line)
	}
	if full := rec.String(); !strings.Contains(full, long) {
		t.Errorf("String() cut the value")
	}
}
