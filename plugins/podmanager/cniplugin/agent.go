package cniplugin

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

const (
	// agentCallTimeout bounds one call to the agent; the agent itself gives up on a
	// request after its requestTimeout (60 s by default).
	agentCallTimeout = 90 * time.Second
	// statusDialTimeout bounds the connection attempt of STATUS.
	statusDialTimeout = 5 * time.Second
	// errPluginNotAvailable is the CNI 1.1 STATUS code "the plugin is not available".
	errPluginNotAvailable uint = 50
)

// agentAddress splits grpcServer into a network ("unix" or "tcp") and an address.
func agentAddress(server string) (network, address string) {
	if strings.HasPrefix(server, "/") {
		return "unix", server
	}
	return "tcp", server
}

// agentTarget is grpcServer as a gRPC target.
func agentTarget(server string) string {
	if network, addr := agentAddress(server); network == "unix" {
		return "unix://" + addr
	}
	return "passthrough:///" + server
}

// agentClient is a connection to the agent's RemoteCNI service.
type agentClient struct {
	cni.RemoteCNIClient
	conn *grpc.ClientConn
}

// dialAgent prepares a connection to the agent; it connects on the first call, which
// fails at once (codes.Unavailable) when the agent is not there.
func dialAgent(server string) (*agentClient, error) {
	conn, err := grpc.NewClient(agentTarget(server), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("contiv-cni: bad grpcServer %q", server), err.Error())
	}
	return &agentClient{RemoteCNIClient: cni.NewRemoteCNIClient(conn), conn: conn}, nil
}

func (c *agentClient) close() { _ = c.conn.Close() }

// probeAgent reports whether the agent's socket accepts a connection.
func probeAgent(ctx context.Context, server string) error {
	network, addr := agentAddress(server)
	ctx, cancel := context.WithTimeout(ctx, statusDialTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// callError turns the failure of a call to the agent into a CNI error: transient
// conditions are "try again later" (11), anything else is an internal error (999).
func callError(what, server string, err error) *types.Error {
	st := status.Convert(err)
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted, codes.Aborted:
		return types.NewError(types.ErrTryAgainLater,
			fmt.Sprintf("%s: the contiv agent at %s cannot process it now, try again later", what, server), st.Message())
	}
	return types.NewError(types.ErrInternal, fmt.Sprintf("%s: calling the contiv agent at %s failed", what, server), st.Message())
}

// replyError is the CNI error of a reply in which the agent reports a failure.
func replyError(what string, reply *cni.CNIReply) *types.Error {
	return types.NewError(types.ErrInternal, fmt.Sprintf("%s: the contiv agent failed: %s", what, reply.GetError()), "")
}
