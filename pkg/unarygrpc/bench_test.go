package unarygrpc

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// The two benchmarks make the same Check call, one connection per call, to
// the same kind of grpc-go server on a unix socket: the cost contiv-cni pays
// per invocation, less process start-up and package initialisation.

func BenchmarkCall(b *testing.B) {
	_, addr := startAgent(b, "unix")
	req := testRequest("bench", modePlain)
	want := replyFor(req)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		reply := &cni.CNIReply{}
		err := Call(ctx, "unix", addr, "/cni.RemoteCNI/Check", req, reply)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if !proto.Equal(reply, want) {
			b.Fatalf("wrong reply %v", reply)
		}
	}
}

func BenchmarkGRPCGoClient(b *testing.B) {
	_, addr := startAgent(b, "unix")
	req := testRequest("bench", modePlain)
	want := replyFor(req)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := grpc.NewClient("unix://"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		reply, err := cni.NewRemoteCNIClient(conn).Check(ctx, req)
		_ = conn.Close()
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if !proto.Equal(reply, want) {
			b.Fatalf("wrong reply %v", reply)
		}
	}
}
