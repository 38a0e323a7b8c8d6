package main

import (
	"github.com/containernetworking/cni/pkg/skel"

	"github.com/contiv-vpp/contiv-vpp/pkg/version"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cniplugin"
)

func main() {
	skel.PluginMainFuncs(cniplugin.Funcs(), cniplugin.Versions(),
		version.String("contiv-cni")+": the CNI plugin of Contiv-VPP; it forwards to the contiv agent")
}
