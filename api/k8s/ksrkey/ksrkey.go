// Package ksrkey holds the etcd key prefixes shared by contiv-ksr, which writes the
// Kubernetes state, and the agents, which watch it, plus the error the key parsers of
// the model packages return. It does not know any resource; those are the sibling
// packages (pod, service, ...) and dbresources.
package ksrkey

import "errors"

const (
	// AllAgentsPrefix is the etcd prefix under which every Ligato-style microservice
	// keeps its data, one sub-tree per microservice label.
	AllAgentsPrefix = "/vnf-agent/"

	// MicroserviceLabel is the label contiv-ksr runs with.
	MicroserviceLabel = "contiv-ksr"

	// KsrPrefix is the etcd prefix of everything contiv-ksr writes (and of the node ID
	// allocations): keys of the model packages are relative to it.
	KsrPrefix = AllAgentsPrefix + MicroserviceLabel + "/"
)

// AgentPrefix returns the etcd prefix of the configuration given to the agent of one
// node from outside (vpp-agent model keys): /vnf-agent/<node>/.
func AgentPrefix(node string) string {
	return AllAgentsPrefix + node + "/"
}

// ErrInvalidKey is wrapped by every error of the key parsers of the model packages.
var ErrInvalidKey = errors.New("invalid key")
