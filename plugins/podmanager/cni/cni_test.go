package cni

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestWireContract pins the messages and field numbers of the Remote CNI API that
// contiv-cni binaries of other versions (and upstream's) rely on.
func TestWireContract(t *testing.T) {
	type field struct {
		name   string
		number protowire.Number
		kind   protoreflect.Kind
		list   bool
	}
	tests := []struct {
		msg    proto.Message
		full   protoreflect.FullName
		fields []field
	}{
		{&CNIRequest{}, "cni.CNIRequest", []field{
			{"version", 1, protoreflect.StringKind, false},
			{"container_id", 2, protoreflect.StringKind, false},
			{"network_namespace", 3, protoreflect.StringKind, false},
			{"interface_name", 4, protoreflect.StringKind, false},
			{"extra_nw_config", 5, protoreflect.StringKind, false},
			{"extra_arguments", 6, protoreflect.StringKind, false},
			{"ipam_type", 7, protoreflect.StringKind, false},
			{"ipam_data", 8, protoreflect.StringKind, false},
		}},
		{&CNIReply{}, "cni.CNIReply", []field{
			{"result", 1, protoreflect.Uint32Kind, false},
			{"error", 2, protoreflect.StringKind, false},
			{"interfaces", 4, protoreflect.MessageKind, true},
			{"routes", 5, protoreflect.MessageKind, true},
			{"dns", 6, protoreflect.MessageKind, true},
		}},
		{&CNIReply_Interface{}, "cni.CNIReply.Interface", []field{
			{"name", 1, protoreflect.StringKind, false},
			{"mac", 2, protoreflect.StringKind, false},
			{"sandbox", 3, protoreflect.StringKind, false},
			{"ip_addresses", 4, protoreflect.MessageKind, true},
		}},
		{&CNIReply_Interface_IP{}, "cni.CNIReply.Interface.IP", []field{
			{"version", 1, protoreflect.EnumKind, false},
			{"address", 2, protoreflect.StringKind, false},
			{"gateway", 3, protoreflect.StringKind, false},
		}},
		{&CNIReply_Route{}, "cni.CNIReply.Route", []field{
			{"dst", 1, protoreflect.StringKind, false},
			{"gw", 2, protoreflect.StringKind, false},
		}},
		{&CNIReply_DNS{}, "cni.CNIReply.DNS", []field{
			{"domain", 1, protoreflect.StringKind, false},
			{"nameservers", 2, protoreflect.StringKind, true},
			{"search", 3, protoreflect.StringKind, true},
			{"options", 4, protoreflect.StringKind, true},
		}},
	}
	for _, tt := range tests {
		d := tt.msg.ProtoReflect().Descriptor()
		if d.FullName() != tt.full {
			t.Errorf("message %s, want %s", d.FullName(), tt.full)
		}
		if d.Fields().Len() != len(tt.fields) {
			t.Errorf("%s has %d fields, want %d", tt.full, d.Fields().Len(), len(tt.fields))
		}
		for _, want := range tt.fields {
			f := d.Fields().ByName(protoreflect.Name(want.name))
			if f == nil {
				t.Errorf("%s lacks field %s", tt.full, want.name)
				continue
			}
			if f.Number() != want.number || f.Kind() != want.kind || f.IsList() != want.list {
				t.Errorf("%s.%s = #%d %v list=%v, want #%d %v list=%v", tt.full, want.name,
					f.Number(), f.Kind(), f.IsList(), want.number, want.kind, want.list)
			}
		}
	}
	ipv := CNIReply_Interface_IP_IPV4.Descriptor()
	if ipv.Values().ByName("IPV4").Number() != 0 || ipv.Values().ByName("IPV6").Number() != 1 {
		t.Errorf("IP version enum: IPV4=%d IPV6=%d, want 0 and 1",
			ipv.Values().ByName("IPV4").Number(), ipv.Values().ByName("IPV6").Number())
	}
	svc := File_plugins_podmanager_cni_cni_proto.Services().ByName("RemoteCNI")
	if svc == nil || svc.FullName() != "cni.RemoteCNI" {
		t.Fatalf("service cni.RemoteCNI missing")
	}
	for _, m := range []string{"Add", "Delete"} {
		md := svc.Methods().ByName(protoreflect.Name(m))
		if md == nil || md.Input().FullName() != "cni.CNIRequest" || md.Output().FullName() != "cni.CNIReply" || md.IsStreamingClient() || md.IsStreamingServer() {
			t.Errorf("rpc %s: %v, want unary CNIRequest -> CNIReply", m, md)
		}
	}
}
