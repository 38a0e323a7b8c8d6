package cniplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	"google.golang.org/grpc/codes"

	"github.com/contiv-vpp/contiv-vpp/pkg/unarygrpc"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

func ipv4(addr, gw string) *cni.CNIReply_Interface_IP {
	return &cni.CNIReply_Interface_IP{Version: cni.CNIReply_Interface_IP_IPV4, Address: addr, Gateway: gw}
}

func ipv6(addr, gw string) *cni.CNIReply_Interface_IP {
	return &cni.CNIReply_Interface_IP{Version: cni.CNIReply_Interface_IP_IPV6, Address: addr, Gateway: gw}
}

// resultJSON renders a reply's result as CNI 1.1 JSON.
func resultJSON(t *testing.T, reply *cni.CNIReply, confDNS types.DNS) string {
	t.Helper()
	res, err := replyToResult(reply, "/var/run/netns/pod", confDNS)
	if err != nil {
		t.Fatalf("replyToResult: %v", err)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return canonicalJSON(t, string(data))
}

// canonicalJSON re-encodes JSON with sorted keys.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestReplyToResult(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reply   *cni.CNIReply
		confDNS types.DNS
		want    string
	}{
		{
			name: "the agent's pod reply",
			reply: &cni.CNIReply{
				Interfaces: []*cni.CNIReply_Interface{{
					Name: "eth0", Mac: "02:fe:89:de:04:4f", Sandbox: "/proc/42/ns/net",
					IpAddresses: []*cni.CNIReply_Interface_IP{ipv4("10.1.1.2/32", "10.1.1.1")},
				}},
				Routes: []*cni.CNIReply_Route{{Dst: "0.0.0.0/0", Gw: "10.1.1.1"}},
				Dns:    []*cni.CNIReply_DNS{{Domain: "cluster.local", Nameservers: []string{"10.96.0.10"}, Search: []string{"default.svc.cluster.local"}, Options: []string{"ndots:5"}}},
			},
			want: `{"cniVersion":"1.1.0","interfaces":[{"name":"eth0","mac":"02:fe:89:de:04:4f","sandbox":"/proc/42/ns/net"}],` +
				`"ips":[{"interface":0,"address":"10.1.1.2/32","gateway":"10.1.1.1"}],"routes":[{"dst":"0.0.0.0/0","gw":"10.1.1.1"}],` +
				`"dns":{"nameservers":["10.96.0.10"],"domain":"cluster.local","search":["default.svc.cluster.local"],"options":["ndots:5"]}}`,
		},
		{
			name: "dual stack, two interfaces, default sandbox, merged DNS",
			reply: &cni.CNIReply{
				Interfaces: []*cni.CNIReply_Interface{
					{Name: "eth0", IpAddresses: []*cni.CNIReply_Interface_IP{ipv4("10.1.1.5/24", ""), ipv6("2001::5/128", "2001::1")}},
					{Name: "net1", Sandbox: "/other", IpAddresses: []*cni.CNIReply_Interface_IP{ipv4("192.168.1.5/24", "")}},
				},
				Routes: []*cni.CNIReply_Route{{Dst: "10.96.0.0/12"}, {Dst: "::/0", Gw: "2001::1"}},
				Dns:    []*cni.CNIReply_DNS{{Nameservers: []string{"10.96.0.10"}}, {Domain: "second", Nameservers: []string{"fd00::10"}}},
			},
			want: `{"cniVersion":"1.1.0","interfaces":[{"name":"eth0","sandbox":"/var/run/netns/pod"},{"name":"net1","sandbox":"/other"}],` +
				`"ips":[{"interface":0,"address":"10.1.1.5/24"},{"interface":0,"address":"2001::5/128","gateway":"2001::1"},{"interface":1,"address":"192.168.1.5/24"}],` +
				`"routes":[{"dst":"10.96.0.0/12"},{"dst":"::/0","gw":"2001::1"}],"dns":{"nameservers":["10.96.0.10","fd00::10"],"domain":"second"}}`,
		},
		{
			name: "the configuration's DNS when the agent gives none",
			reply: &cni.CNIReply{Interfaces: []*cni.CNIReply_Interface{{
				Name: "eth0", IpAddresses: []*cni.CNIReply_Interface_IP{ipv4("10.1.1.2/32", "10.1.1.1")},
			}}},
			confDNS: types.DNS{Nameservers: []string{"10.96.0.10"}},
			want: `{"cniVersion":"1.1.0","interfaces":[{"name":"eth0","sandbox":"/var/run/netns/pod"}],` +
				`"ips":[{"interface":0,"address":"10.1.1.2/32","gateway":"10.1.1.1"}],"dns":{"nameservers":["10.96.0.10"]}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := resultJSON(t, tc.reply, tc.confDNS), canonicalJSON(t, tc.want); got != want {
				t.Errorf("result:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestReplyToResultRejectsBadValues(t *testing.T) {
	iface := func(ips ...*cni.CNIReply_Interface_IP) *cni.CNIReply {
		return &cni.CNIReply{Interfaces: []*cni.CNIReply_Interface{{Name: "eth0", IpAddresses: ips}}}
	}
	for _, tc := range []struct {
		reply *cni.CNIReply
		want  string
	}{
		{iface(ipv4("10.1.1.2", "")), `address "10.1.1.2"`},
		{iface(ipv4("10.1.1.2/32", "gateway")), `gateway "gateway" is not an IP address`},
		{iface(ipv6("10.1.1.2/32", "")), "is not of version IPV6"},
		{iface(ipv4("2001::2/128", "")), "is not of version IPV4"},
		{&cni.CNIReply{Interfaces: []*cni.CNIReply_Interface{{}}}, "interface 0 has no name"},
		{&cni.CNIReply{Routes: []*cni.CNIReply_Route{{Dst: "default"}}}, `route destination "default"`},
		{&cni.CNIReply{Routes: []*cni.CNIReply_Route{{Dst: "0.0.0.0/0", Gw: "x"}}}, `gateway "x"`},
	} {
		if _, err := replyToResult(tc.reply, "/ns", types.DNS{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("replyToResult(%v) = %v, want an error with %q", tc.reply, err, tc.want)
		}
	}
}

func TestResultKeepsTheRequestedVersion(t *testing.T) {
	res, err := replyToResult(&cni.CNIReply{Interfaces: []*cni.CNIReply_Interface{{
		Name: "eth0", IpAddresses: []*cni.CNIReply_Interface_IP{ipv4("10.1.1.2/32", "10.1.1.1")},
	}}}, "/ns", types.DNS{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"0.3.1", "0.4.0", "1.0.0", "1.1.0"} {
		vr, err := res.GetAsVersion(v)
		if err != nil || vr.Version() != v {
			t.Errorf("GetAsVersion(%s) = %v, %v", v, vr, err)
		}
	}
}

func TestCallErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err     error
		want    uint
		details string
	}{
		{&unarygrpc.Error{Code: codes.Unavailable, Message: "connection refused"}, types.ErrTryAgainLater, "connection refused"},
		{&unarygrpc.Error{Code: codes.DeadlineExceeded, Message: "not processed within 1m0s"}, types.ErrTryAgainLater, "not processed within 1m0s"},
		{fmt.Errorf("wrapped: %w", &unarygrpc.Error{Code: codes.Aborted, Message: "stopping"}), types.ErrTryAgainLater, "stopping"},
		{&unarygrpc.Error{Code: codes.Internal, Message: "boom"}, types.ErrInternal, "boom"},
		{&unarygrpc.Error{Code: codes.Unimplemented, Message: "method Check not implemented"}, types.ErrInternal, "method Check not implemented"},
		{errors.New("not from unarygrpc"), types.ErrInternal, "not from unarygrpc"},
		{&unarygrpc.Error{Code: codes.Unavailable, Message: "cannot connect to unix /var/run/contiv/cni.sock: permission denied"},
			types.ErrIOFailure, "cannot connect to unix /var/run/contiv/cni.sock: permission denied"},
	} {
		e := callError("ADD of pod default/web", "/var/run/contiv/cni.sock", tc.err)
		if e.Code != tc.want || !strings.Contains(e.Error(), "/var/run/contiv/cni.sock") || e.Details != tc.details {
			t.Errorf("callError(%v) = %+v, want code %d with details %q", tc.err, e, tc.want, tc.details)
		}
	}
	e := replyError("DEL of pod default/web", &cni.CNIReply{Result: cni.ResultError, Error: "boom"})
	if e.Code != types.ErrInternal || e.Msg != "DEL of pod default/web: the contiv agent failed: boom" {
		t.Errorf("replyError = %+v", e)
	}
	for result, want := range map[uint32]uint{cni.ResultTryAgain: types.ErrTryAgainLater, cni.ResultInvalid: types.ErrInvalidEnvironmentVariables,
		cni.ResultUnknownContainer: types.ErrUnknownContainer, 77: types.ErrInternal} {
		if e := replyError("ADD", &cni.CNIReply{Result: result, Error: "x"}); e.Code != want {
			t.Errorf("replyError of result %d = %+v, want code %d", result, e, want)
		}
	}
}

func TestAgentAddress(t *testing.T) {
	for in, want := range map[string][2]string{
		"/var/run/contiv/cni.sock": {"unix", "/var/run/contiv/cni.sock"},
		"127.0.0.1:9111":           {"tcp", "127.0.0.1:9111"},
		"agent.local:9111":         {"tcp", "agent.local:9111"},
	} {
		if network, addr := agentAddress(in); network != want[0] || addr != want[1] {
			t.Errorf("agentAddress(%q) = %s %s, want %s %s", in, network, addr, want[0], want[1])
		}
	}
}

func TestPodFromArgs(t *testing.T) {
	for in, want := range map[string]string{
		"IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web": "default/web",
		"K8S_POD_NAMESPACE=default":                                  "",
		"":                                                           "",
	} {
		if got := podFromArgs(in); got != want {
			t.Errorf("podFromArgs(%q) = %q, want %q", in, got, want)
		}
	}
}
