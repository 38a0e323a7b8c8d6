package controller

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// orderScheduler records the order of SetValue calls.
type orderScheduler struct {
	*fakeScheduler
	keys []string
}

type orderTxn struct {
	kvs.Txn
	s *orderScheduler
}

func (s *orderScheduler) StartNBTransaction() kvs.Txn {
	return &orderTxn{Txn: s.fakeScheduler.StartNBTransaction(), s: s}
}

func (t *orderTxn) SetValue(key string, value proto.Message) kvs.Txn {
	t.s.keys = append(t.s.keys, key)
	t.Txn.SetValue(key, value)
	return t
}

func TestTransactionKeepsTheStagingOrderOfHandlers(t *testing.T) {
	s := &orderScheduler{fakeScheduler: &fakeScheduler{}}
	txn := newSchedulerTxn(nil)
	var want []string
	for i := 0; i < 50; i++ {
		k := fmt.Sprintf("k%02d", (i*37)%50) // not sorted
		want = append(want, k)
		txn.Put(k, wrapperspb.String("v"))
	}
	txn.Delete(want[3])                      // restaging keeps the first position
	txn.Put(want[7], wrapperspb.String("w")) // and takes the last value
	if _, err := txn.commit(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.keys) != fmt.Sprint(want) {
		t.Errorf("committed in order\n%v\nwant\n%v", s.keys, want)
	}
	got := s.all()[0].values
	if got[want[3]] != nil || !proto.Equal(got[want[7]], wrapperspb.String("w")) {
		t.Errorf("values = %v", got)
	}
}
