package checks

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// dontFragmentSupported: icmp.dont_fragment sets IP_MTU_DISCOVER, which
// Linux has.
const dontFragmentSupported = true

// listenICMP opens an ICMP socket: "udp4"/"udp6" an unprivileged ping
// socket (SOCK_DGRAM, IPPROTO_ICMP or IPPROTO_ICMPV6: the kernel sets the
// echo ID and hands the socket only the replies that carry it), "ip4:icmp"
// and "ip6:ipv6-icmp" a raw socket. The ping socket is opened here rather
// than by icmp.ListenPacket so that its descriptor stays reachable for
// socket options (dont_fragment); it is bound, so the ID the kernel gave
// it is the port of its LocalAddr.
func listenICMP(network string) (net.PacketConn, error) {
	family, proto, addr := syscall.AF_INET, syscall.IPPROTO_ICMP, syscall.Sockaddr(&syscall.SockaddrInet4{})
	switch network {
	case "ip4:icmp":
		return net.ListenPacket(network, "0.0.0.0")
	case "ip6:ipv6-icmp":
		return net.ListenPacket(network, "::")
	case "udp4":
	case "udp6":
		family, proto, addr = syscall.AF_INET6, syscall.IPPROTO_ICMPV6, &syscall.SockaddrInet6{}
	default:
		return nil, errors.New("unknown icmp network " + network)
	}
	s, err := syscall.Socket(family, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := syscall.Bind(s, addr); err != nil {
		syscall.Close(s)
		return nil, os.NewSyscallError("bind", err)
	}
	f := os.NewFile(uintptr(s), "icmp-"+network)
	defer f.Close()
	return net.FilePacketConn(f)
}

// setDontFragment sets the DF bit on every packet the IPv4 socket sends
// (IP_MTU_DISCOVER = IP_PMTUDISC_DO): a packet over the path MTU is refused with
// EMSGSIZE instead of fragmented.
func setDontFragment(conn net.PacketConn) error {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return errors.New("socket has no descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_MTU_DISCOVER, syscall.IP_PMTUDISC_DO)
	}); err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt", serr)
}
