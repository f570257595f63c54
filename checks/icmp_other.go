//go:build !linux

package checks

import (
	"errors"
	"net"

	"golang.org/x/net/icmp"
)

// dontFragmentSupported: icmp.dont_fragment is Linux only.
const dontFragmentSupported = false

// listenICMP opens an ICMP socket with icmp.ListenPacket: "udp4"/"udp6"
// an unprivileged ping socket where the system has them (macOS),
// "ip4:icmp" and "ip6:ipv6-icmp" a raw socket.
func listenICMP(network string) (net.PacketConn, error) {
	addr := "0.0.0.0"
	if network == "udp6" || network == "ip6:ipv6-icmp" {
		addr = "::"
	}
	return icmp.ListenPacket(network, addr)
}

func setDontFragment(net.PacketConn) error {
	return errors.New("not supported on this operating system (Linux only)")
}
