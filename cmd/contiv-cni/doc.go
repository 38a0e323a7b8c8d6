// Command contiv-cni is the CNI plugin of Contiv-VPP: the container runtime executes it
// for every CNI command, and it forwards the command to the contiv agent on the node over
// gRPC. The behaviour, configuration keys and error codes are documented in package
// plugins/podmanager/cniplugin; this command only hands the CNI library its functions.
package main
