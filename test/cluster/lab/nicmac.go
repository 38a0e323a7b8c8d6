package lab

import (
	"fmt"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/core"
)

// nicSwIfIndex is the sw_if_index of the simulator's first (and only) NIC.
const nicSwIfIndex = 1

// nicMAC is the burned-in MAC of node index's NIC. On a shared node network each node
// needs its own, as real NICs have, and the same one after a VPP restart. vpp-sim now
// derives a distinct one from the Linux link it binds (before, every simulator's first
// NIC had the same MAC and the node network lost every frame between nodes: a backend
// calling its own ClusterIP was then answered only by itself); the lab still sets one
// per node index, so that a node's MAC is known in advance and reads well in traces.
func nicMAC(index int) ethernet_types.MacAddress {
	return ethernet_types.MacAddress{0x08, 0x00, 0x27, 0x6c, byte(index >> 8), byte(index)}
}

// setNICMAC gives the node's NIC its MAC through the simulator's API socket, as the
// hardware would, before the agent connects (and after every simulator start).
func (n *Node) setNICMAC() error {
	conn, err := core.Connect(socketclient.NewVppClient(n.VPPSocket))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", n.VPPSocket, err)
	}
	defer conn.Disconnect()
	ch, err := conn.NewAPIChannel()
	if err != nil {
		return fmt.Errorf("VPP API channel: %w", err)
	}
	defer ch.Close()
	reply := &interfaces.SwInterfaceSetMacAddressReply{}
	req := &interfaces.SwInterfaceSetMacAddress{SwIfIndex: nicSwIfIndex, MacAddress: nicMAC(n.index)}
	if err := ch.SendRequest(req).ReceiveReply(reply); err != nil {
		return fmt.Errorf("set the MAC of %s to %s: %w", NIC, req.MacAddress, err)
	}
	return nil
}
