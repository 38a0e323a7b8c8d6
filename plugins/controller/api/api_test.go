package api

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestEventCatalogue(t *testing.T) {
	type row struct {
		ev        Event
		name      string
		method    EventMethodType
		blocking  bool
		txnType   UpdateTransactionType
		direction UpdateDirectionType
	}
	rows := []row{
		{ev: NewDBResync(), name: "Database Resync", method: FullResync},
		{ev: &KubeStateChange{Resource: "pod", Key: "k8s/pod/a/namespace/default"}, name: "Kubernetes State Change", method: Update, txnType: BestEffort, direction: Forward},
		{ev: NewExternalConfigChange("db", false), name: "External Config Change", method: Update, txnType: BestEffort, direction: Forward},
		{ev: NewExternalConfigChange("grpc", true), name: "External Config Change", method: Update, blocking: true, txnType: BestEffort, direction: Forward},
		{ev: NewExternalConfigResync("grpc", true), name: "External Config Resync", method: UpstreamResync, blocking: true},
		{ev: &HealingResync{Type: Periodic}, name: "Healing Resync", method: DownstreamResync},
		{ev: &HealingResync{Type: AfterError, Error: errors.New("x")}, name: "Healing Resync", method: FullResync},
		{ev: NewShutdown(), name: "Shutdown", method: Update, blocking: true, txnType: BestEffort, direction: Forward},
	}
	for _, r := range rows {
		t.Run(r.ev.String(), func(t *testing.T) {
			if r.ev.GetName() != r.name || r.ev.Method() != r.method || r.ev.IsBlocking() != r.blocking {
				t.Errorf("got name %q method %v blocking %v", r.ev.GetName(), r.ev.Method(), r.ev.IsBlocking())
			}
			ue, isUpdate := r.ev.(UpdateEvent)
			if isUpdate != (r.method == Update) {
				t.Fatalf("implements UpdateEvent = %v for method %v", isUpdate, r.method)
			}
			if isUpdate && (ue.TransactionType() != r.txnType || ue.Direction() != r.direction) {
				t.Errorf("txn type %v direction %v", ue.TransactionType(), ue.Direction())
			}
		})
	}
}

func TestEventDescriptions(t *testing.T) {
	v := wrapperspb.String("x")
	db := NewDBResync()
	db.KubeState = NewKubeStateData("service", "pod")
	db.KubeState["pod"]["k8s/pod/a/namespace/default"] = v
	ecc := NewExternalConfigChange("db", false)
	ecc.UpdatedKVs["config/vpp/v2/interfaces/b"] = nil
	ecc.UpdatedKVs["config/vpp/v2/interfaces/a"] = v
	tests := []struct {
		ev   Event
		want string
	}{
		{db, "Database Resync (remote DB)\n * pod: 1\n * service: 0"},
		{&DBResync{Local: true}, "Database Resync (local DB)"},
		{&KubeStateChange{Resource: "pod", Key: "k", NewValue: v}, "Kubernetes State Change: add pod k"},
		{&KubeStateChange{Resource: "pod", Key: "k", PrevValue: v}, "Kubernetes State Change: delete pod k"},
		{&KubeStateChange{Resource: "pod", Key: "k", PrevValue: v, NewValue: v}, "Kubernetes State Change: update pod k"},
		{ecc, "External Config Change (source db)\n * put config/vpp/v2/interfaces/a\n * delete config/vpp/v2/interfaces/b"},
		{&HealingResync{Type: AfterError, Error: errors.New("vpp down")}, "Healing Resync (After-Error, after: vpp down)"},
		{&HealingResync{Type: Periodic}, "Healing Resync (Periodic)"},
	}
	for _, tc := range tests {
		if got := tc.ev.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestBlockingEventResultIsDeliveredOnce(t *testing.T) {
	ev := NewShutdown()
	first := errors.New("first")
	go func() { // Wait blocks until then, whenever it runs
		ev.Done(first)
		ev.Done(errors.New("second"))
	}()
	if err := ev.Wait(); !errors.Is(err, first) {
		t.Fatalf("Wait = %v, want the first result", err)
	}
	select {
	case err := <-ev.WaitChan():
		t.Fatalf("a second result was delivered: %v", err)
	default:
	}
}

func TestErrorKindsSurviveWrapping(t *testing.T) {
	base := errors.New("etcd unreachable")
	fatal := fmt.Errorf("nodesync: %w", NewFatalError(base))
	abort := fmt.Errorf("ipam: %w", NewAbortEventError(base))
	if !IsFatal(fatal) || IsAbort(fatal) {
		t.Errorf("fatal: IsFatal=%v IsAbort=%v", IsFatal(fatal), IsAbort(fatal))
	}
	if !IsAbort(abort) || IsFatal(abort) {
		t.Errorf("abort: IsFatal=%v IsAbort=%v", IsFatal(abort), IsAbort(abort))
	}
	if !errors.Is(fatal, base) || !errors.Is(abort, base) {
		t.Error("original error lost")
	}
	if IsFatal(base) || IsAbort(base) {
		t.Error("plain error classified")
	}
	if got := NewFatalError(base).Error(); got != "fatal error: etcd unreachable" {
		t.Errorf("message %q", got)
	}
}

// stagingTxn is a minimal UpdateOperations that records what handlers stage.
type stagingTxn map[string]proto.Message

func (s stagingTxn) Put(k string, v proto.Message) { s[k] = v }
func (s stagingTxn) Get(k string) proto.Message    { return s[k] }
func (s stagingTxn) Delete(k string)               { s[k] = nil }

func TestPutAllAndDeleteAll(t *testing.T) {
	txn := stagingTxn{}
	kvs := KeyValuePairs{"a": wrapperspb.String("1"), "b": wrapperspb.String("2")}
	PutAll(txn, kvs)
	if len(txn) != 2 || !proto.Equal(txn.Get("a"), kvs["a"]) {
		t.Fatalf("after PutAll: %v", txn)
	}
	DeleteAll(txn, KeyValuePairs{"a": nil})
	if v, ok := txn["a"]; !ok || v != nil {
		t.Errorf("a not staged for deletion: %v", txn)
	}
	if txn.Get("b") == nil {
		t.Error("b lost")
	}
}

func TestEnumStrings(t *testing.T) {
	got := strings.Join([]string{FullResync.String(), DownstreamResync.String(), UpstreamResync.String(), Update.String(),
		Forward.String(), Reverse.String(), BestEffort.String(), BestEffortIgnoreErrors.String(), RevertOnFailure.String(),
		EventMethodType(9).String()}, ",")
	want := "Full-Resync,Downstream-Resync,Upstream-Resync,Update,Forward,Reverse,BestEffort,BestEffortIgnoreErrors,RevertOnFailure,EventMethodType(9)"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !FullResync.IsResync() || Update.IsResync() {
		t.Error("IsResync wrong")
	}
}

func TestMethodMarshalsAsName(t *testing.T) {
	b, err := UpstreamResync.MarshalText()
	if err != nil || string(b) != "Upstream-Resync" {
		t.Errorf("MarshalText = %s, %v", b, err)
	}
}
