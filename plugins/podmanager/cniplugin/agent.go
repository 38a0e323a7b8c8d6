package cniplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"google.golang.org/grpc/codes"

	"github.com/contiv-vpp/contiv-vpp/pkg/unarygrpc"
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

// Methods of the RemoteCNI service.
const (
	methodAdd    = cni.RemoteCNI_Add_FullMethodName
	methodDelete = cni.RemoteCNI_Delete_FullMethodName
	methodCheck  = cni.RemoteCNI_Check_FullMethodName
)

// callAgent makes one RemoteCNI call on a connection of its own. The plugin makes one
// call per process, so it uses unarygrpc rather than a grpc-go client, whose set-up
// cost more than the call.
func callAgent(ctx context.Context, server, method string, req *cni.CNIRequest) (*cni.CNIReply, error) {
	network, addr := agentAddress(server)
	reply := &cni.CNIReply{}
	if err := unarygrpc.Call(ctx, network, addr, method, req, reply); err != nil {
		return nil, err
	}
	return reply, nil
}

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
// conditions are "try again later" (11); a socket contiv-cni may not open (permission
// denied: retrying cannot help) is an I/O failure (5); anything else is an internal
// error (999).
func callError(what, server string, err error) *types.Error {
	code, msg := unarygrpc.Code(err), err.Error()
	var e *unarygrpc.Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	// unarygrpc reports a failed connect as Unavailable with the errno's text.
	if code == codes.Unavailable && (strings.Contains(msg, syscall.EACCES.Error()) || strings.Contains(msg, syscall.EPERM.Error())) {
		return types.NewError(types.ErrIOFailure,
			fmt.Sprintf("%s: contiv-cni may not connect to the contiv agent at %s (check the socket's permissions and that contiv-cni runs as root)", what, server), msg)
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted, codes.Aborted:
		return types.NewError(types.ErrTryAgainLater,
			fmt.Sprintf("%s: the contiv agent at %s cannot process it now, try again later", what, server), msg)
	}
	return types.NewError(types.ErrInternal, fmt.Sprintf("%s: calling the contiv agent at %s failed", what, server), msg)
}

// replyError is the CNI error of a reply in which the agent reports a failure:
// cni.ResultTryAgain is "try again later" (11), cni.ResultInvalid "invalid necessary
// environment variables" (4: the CNI_ARGS or CNI_CONTAINERID the request carries),
// cni.ResultUnknownContainer "container unknown or does not exist" (3: CHECK of a pod
// whose network namespace is gone), any other result an internal error (999).
func replyError(what string, reply *cni.CNIReply) *types.Error {
	switch reply.GetResult() {
	case cni.ResultTryAgain:
		return types.NewError(types.ErrTryAgainLater, fmt.Sprintf("%s: the contiv agent failed, try again later: %s", what, reply.GetError()), "")
	case cni.ResultInvalid:
		return types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("%s: the contiv agent refused the request: %s", what, reply.GetError()), "")
	case cni.ResultUnknownContainer:
		return types.NewError(types.ErrUnknownContainer, fmt.Sprintf("%s: %s", what, reply.GetError()), "")
	}
	return types.NewError(types.ErrInternal, fmt.Sprintf("%s: the contiv agent failed: %s", what, reply.GetError()), "")
}
