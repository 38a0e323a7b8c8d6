package cniplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// ipamPlugin runs the chained IPAM plugin of the configuration.
type ipamPlugin interface {
	Add(ctx context.Context, pluginType string, conf []byte) (types.Result, error)
	Del(ctx context.Context, pluginType string, conf []byte) error
	Check(ctx context.Context, pluginType string, conf []byte) error
	Status(ctx context.Context, pluginType string, conf []byte) error
	GC(ctx context.Context, pluginType string, conf []byte) error
}

// execIPAM executes the IPAM plugin binary found in CNI_PATH.
type execIPAM struct{}

// Add runs the IPAM plugin's ADD.
func (execIPAM) Add(ctx context.Context, t string, conf []byte) (types.Result, error) {
	return invoke.DelegateAdd(ctx, t, conf, nil)
}

// Del runs the IPAM plugin's DEL.
func (execIPAM) Del(ctx context.Context, t string, conf []byte) error {
	return invoke.DelegateDel(ctx, t, conf, nil)
}

// Check runs the IPAM plugin's CHECK.
func (execIPAM) Check(ctx context.Context, t string, conf []byte) error {
	return invoke.DelegateCheck(ctx, t, conf, nil)
}

// Status runs the IPAM plugin's STATUS.
func (execIPAM) Status(ctx context.Context, t string, conf []byte) error {
	return invoke.DelegateStatus(ctx, t, conf, nil)
}

// GC runs the IPAM plugin's GC.
func (execIPAM) GC(ctx context.Context, t string, conf []byte) error {
	return invoke.DelegateGC(ctx, t, conf, nil)
}

func cmdAdd(args *skel.CmdArgs) error    { return run("ADD", args, (*request).add) }
func cmdDel(args *skel.CmdArgs) error    { return run("DEL", args, (*request).del) }
func cmdCheck(args *skel.CmdArgs) error  { return run("CHECK", args, (*request).check) }
func cmdStatus(args *skel.CmdArgs) error { return run("STATUS", args, (*request).status) }
func cmdGC(args *skel.CmdArgs) error     { return run("GC", args, (*request).gc) }

// request is one CNI command being served.
type request struct {
	command string
	args    *skel.CmdArgs
	conf    *netConf
	log     logrus.FieldLogger
	ipam    ipamPlugin
	stdout  io.Writer
}

func run(command string, args *skel.CmdArgs, serve func(*request) error) error {
	return runWith(command, args, execIPAM{}, os.Stdout, os.Stderr, serve)
}

// runWith parses the configuration, opens the log, serves the command and logs its
// outcome.
func runWith(command string, args *skel.CmdArgs, ipam ipamPlugin, stdout, stderr io.Writer, serve func(*request) error) error {
	conf, confErr := parseConfig(args.StdinData, command)
	logger, closeLog := openLog(conf.logTarget(), stderr)
	defer closeLog()
	fields := logrus.Fields{"cmd": command}
	if args.ContainerID != "" {
		fields["container"] = args.ContainerID
	}
	if args.Netns != "" {
		fields["netns"] = args.Netns
	}
	if pod := podFromArgs(args.Args); pod != "" {
		fields["pod"] = pod
	}
	log := logger.WithFields(fields)
	if confErr != nil {
		log.WithError(confErr).Error("request refused")
		return confErr
	}
	if command == "ADD" || command == "CHECK" {
		if err := checkPodArgs(args.Args); err != nil {
			log.WithError(err).Error("request refused")
			return err
		}
	}
	if command == "ADD" && sameNetns(args.Netns, ownNetnsPath) {
		// The runtime runs the plugin in the node's namespace: a pod wired there would
		// take the node's default route. Refused before the agent is asked.
		err := types.NewError(types.ErrInvalidEnvironmentVariables,
			fmt.Sprintf("CNI_NETNS %s is the node's own network namespace: a pod is never wired there", args.Netns), "")
		log.WithError(err).Error("request refused")
		return err
	}
	log.WithField("config", conf.describe()).Info("request")
	start := time.Now()
	err := serve(&request{command: command, args: args, conf: conf, log: log, ipam: ipam, stdout: stdout})
	log = log.WithField("duration", time.Since(start).Round(time.Microsecond).String())
	if err != nil {
		log.WithError(err).Error("request failed")
		return err
	}
	log.Info("request done")
	return nil
}

// ownNetnsPath names the network namespace the plugin runs in.
const ownNetnsPath = "/proc/self/ns/net"

// sameNetns reports whether paths a and b name the same namespace (false when either
// cannot be examined).
func sameNetns(a, b string) bool {
	var sa, sb unix.Stat_t
	if a == "" || unix.Stat(a, &sa) != nil || unix.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// checkPodArgs refuses CNI_ARGS whose pod name or namespace breaks the Kubernetes name
// rules (code 4, invalid environment variables); missing ones are left to the agent,
// which names them.
func checkPodArgs(args string) error {
	var id podmodel.ID
	for _, pair := range strings.Split(args, ";") {
		k, v, _ := strings.Cut(pair, "=")
		switch strings.TrimSpace(k) {
		case "K8S_POD_NAME":
			id.Name = strings.TrimSpace(v)
		case "K8S_POD_NAMESPACE":
			id.Namespace = strings.TrimSpace(v)
		}
	}
	if id.Name == "" || id.Namespace == "" {
		return nil
	}
	if err := id.Validate(); err != nil {
		return types.NewError(types.ErrInvalidEnvironmentVariables, "contiv-cni: CNI_ARGS: "+err.Error(), "")
	}
	return nil
}

// podFromArgs returns "namespace/name" from CNI_ARGS, "" when they do not name a pod.
func podFromArgs(args string) string {
	var name, ns string
	for _, pair := range strings.Split(args, ";") {
		k, v, _ := strings.Cut(pair, "=")
		switch strings.TrimSpace(k) {
		case "K8S_POD_NAME":
			name = strings.TrimSpace(v)
		case "K8S_POD_NAMESPACE":
			ns = strings.TrimSpace(v)
		}
	}
	if name == "" {
		return ""
	}
	return ns + "/" + name
}

// what names the request in error messages.
func (r *request) what() string {
	s := r.command
	if pod := podFromArgs(r.args.Args); pod != "" {
		s += " of pod " + pod
	}
	if r.args.ContainerID != "" {
		s += " (container " + r.args.ContainerID + ")"
	}
	return s
}

// agentRequest is the request for the agent.
func (r *request) agentRequest() *cni.CNIRequest {
	return &cni.CNIRequest{
		Version:          r.conf.CNIVersion,
		ContainerId:      r.args.ContainerID,
		NetworkNamespace: r.args.Netns,
		InterfaceName:    r.args.IfName,
		ExtraNwConfig:    string(r.args.StdinData),
		ExtraArguments:   r.args.Args,
	}
}

// ipamError is the CNI error of a failed IPAM plugin: its own code when it gave one.
func (r *request) ipamError(err error) error {
	msg := fmt.Sprintf("%s: IPAM plugin %s", r.what(), r.conf.ipamType())
	var cniErr *types.Error
	if errors.As(err, &cniErr) {
		return types.NewError(cniErr.Code, msg+": "+cniErr.Msg, cniErr.Details)
	}
	return types.NewError(types.ErrInternal, msg+" failed", err.Error())
}

func (r *request) add() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), agentCallTimeout)
	defer cancel()
	req := r.agentRequest()
	if t := r.conf.ipamType(); t != "" {
		allocated, ierr := r.ipam.Add(ctx, t, r.args.StdinData)
		if ierr != nil {
			return r.ipamError(ierr)
		}
		// From here on, a failed ADD gives the allocation back.
		defer func() {
			if err == nil {
				return
			}
			if derr := r.ipam.Del(context.Background(), t, r.args.StdinData); derr != nil {
				r.log.WithError(derr).Warn("IPAM release after the failed ADD failed")
			} else {
				r.log.Info("IPAM allocation released after the failed ADD")
			}
		}()
		current, cerr := types100.NewResultFromResult(allocated)
		if cerr != nil {
			return types.NewError(types.ErrDecodingFailure, r.what()+": unusable result of IPAM plugin "+t, cerr.Error())
		}
		data, merr := json.Marshal(current)
		if merr != nil {
			return types.NewError(types.ErrInternal, r.what()+": encode the IPAM result", merr.Error())
		}
		req.IpamType, req.IpamData = t, string(data)
		r.log.WithField("ipamResult", req.IpamData).Info("IPAM plugin allocated")
	}

	reply, cerr := callAgent(ctx, r.conf.GRPCServer, methodAdd, req)
	if cerr != nil {
		return callError(r.what(), r.conf.GRPCServer, cerr)
	}
	if reply.GetResult() != cni.ResultOK {
		return replyError(r.what(), reply)
	}
	result, rerr := replyToResult(reply, r.args.Netns, r.conf.DNS)
	if rerr != nil {
		return types.NewError(types.ErrInternal, r.what()+": unusable reply of the contiv agent", rerr.Error())
	}
	if len(result.Interfaces) == 0 {
		return types.NewError(types.ErrInternal, r.what()+": the contiv agent reported no interface for the pod", "")
	}
	versioned, verr := result.GetAsVersion(r.conf.CNIVersion)
	if verr != nil {
		return types.NewError(types.ErrIncompatibleCNIVersion, r.what()+": cannot express the result in CNI "+r.conf.CNIVersion, verr.Error())
	}
	r.log.WithField("result", resultSummary(result)).Info("pod connected")
	if perr := versioned.PrintTo(r.stdout); perr != nil {
		return types.NewError(types.ErrIOFailure, r.what()+": write the result", perr.Error())
	}
	return nil
}

// resultSummary describes a result in one line for the log.
func resultSummary(res *types100.Result) string {
	var parts []string
	for _, ip := range res.IPs {
		s := ip.Address.String()
		if ip.Gateway != nil {
			s += " gw " + ip.Gateway.String()
		}
		parts = append(parts, s)
	}
	for _, rt := range res.Routes {
		parts = append(parts, "route "+rt.String())
	}
	return strings.Join(parts, ", ")
}

func (r *request) del() error {
	ctx, cancel := context.WithTimeout(context.Background(), agentCallTimeout)
	defer cancel()
	reply, cerr := callAgent(ctx, r.conf.GRPCServer, methodDelete, r.agentRequest())
	if cerr != nil {
		// The IPAM allocation stays until the agent confirms the delete: the runtime
		// retries the DEL.
		return callError(r.what(), r.conf.GRPCServer, cerr)
	}
	if reply.GetResult() != cni.ResultOK {
		return replyError(r.what(), reply)
	}
	if t := r.conf.ipamType(); t != "" {
		if err := r.ipam.Del(ctx, t, r.args.StdinData); err != nil {
			return r.ipamError(err)
		}
	}
	return nil
}

func (r *request) check() error {
	if r.conf.RawPrevResult == nil {
		return types.NewError(types.ErrInvalidNetworkConfig, r.what()+": CHECK needs the prevResult of the ADD", "")
	}
	if err := version.ParsePrevResult(&r.conf.PluginConf); err != nil {
		return types.NewError(types.ErrDecodingFailure, r.what()+": cannot decode prevResult", err.Error())
	}
	prev, err := types100.NewResultFromResult(r.conf.PrevResult)
	if err != nil {
		return types.NewError(types.ErrDecodingFailure, r.what()+": cannot convert prevResult", err.Error())
	}
	inSandbox := false
	for _, iface := range prev.Interfaces {
		inSandbox = inSandbox || iface.Sandbox == r.args.Netns
	}
	if !inSandbox {
		return types.NewError(types.ErrInternal, fmt.Sprintf("%s: prevResult has no interface in netns %s", r.what(), r.args.Netns), "")
	}

	ctx, cancel := context.WithTimeout(context.Background(), agentCallTimeout)
	defer cancel()
	reply, cerr := callAgent(ctx, r.conf.GRPCServer, methodCheck, r.agentRequest())
	if cerr != nil {
		return callError(r.what(), r.conf.GRPCServer, cerr)
	}
	if reply.GetResult() != cni.ResultOK {
		return replyError(r.what(), reply)
	}
	if err := checkPodNetwork(r.what(), r.args.Netns, r.args.IfName, prev); err != nil {
		return err
	}
	if t := r.conf.ipamType(); t != "" {
		if err := r.ipam.Check(ctx, t, r.args.StdinData); err != nil {
			return r.ipamError(err)
		}
	}
	return nil
}

func (r *request) status() error {
	ctx, cancel := context.WithTimeout(context.Background(), agentCallTimeout)
	defer cancel()
	if err := probeAgent(ctx, r.conf.GRPCServer); err != nil {
		return types.NewError(errPluginNotAvailable, "contiv-cni: the contiv agent is not available at "+r.conf.GRPCServer, err.Error())
	}
	if t := r.conf.ipamType(); t != "" {
		if err := r.ipam.Status(ctx, t, r.args.StdinData); err != nil {
			return r.ipamError(err)
		}
	}
	return nil
}

func (r *request) gc() error {
	t := r.conf.ipamType()
	if t == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), agentCallTimeout)
	defer cancel()
	if err := r.ipam.GC(ctx, t, r.args.StdinData); err != nil {
		return r.ipamError(err)
	}
	return nil
}

// Funcs returns the CNI command handlers for skel.PluginMainFuncs.
func Funcs() skel.CNIFuncs {
	return skel.CNIFuncs{Add: cmdAdd, Del: cmdDel, Check: cmdCheck, Status: cmdStatus, GC: cmdGC}
}

// Versions returns the CNI spec versions of the configurations contiv-cni takes.
func Versions() version.PluginInfo {
	return version.PluginSupports("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")
}
