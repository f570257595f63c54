package checks

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// icmpNetnsEnv marks the test binary started in a network namespace of
// its own by TestICMPInNetns.
const icmpNetnsEnv = "VIGIL_TEST_ICMP_NETNS"

// TestICMPInNetns runs TestICMPNetnsChild in a new network namespace,
// where it may set net.ipv4.ping_group_range and icmp_echo_ignore_all
// without touching the host's: the unprivileged and the raw socket are
// each used and checked, a loopback that does not answer makes the run
// time out while forged replies with another ID, sequence, data or sender
// are read past, and without CAP_NET_RAW or a ping group the error says
// which socket failed and why.
func TestICMPInNetns(t *testing.T) {
	if os.Getenv(icmpNetnsEnv) != "" {
		t.Skip("inside the namespace: TestICMPNetnsChild runs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestICMPNetnsChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), icmpNetnsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		msg := "cannot start a test in a network namespace of its own (needs root or CAP_SYS_ADMIN): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestICMPNetnsChild") {
		t.Fatalf("TestICMPNetnsChild in a new network namespace: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "icmp_linux_test.go") || strings.Contains(l, "--- ") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

func TestICMPNetnsChild(t *testing.T) {
	if os.Getenv(icmpNetnsEnv) == "" {
		t.Skip("runs inside TestICMPInNetns, in a network namespace of its own")
	}
	if err := loopbackUp(); err != nil {
		t.Fatalf("bringing lo up: %v", err)
	}
	sysctl := func(t *testing.T, name, v string) {
		t.Helper()
		if err := os.WriteFile("/proc/sys/"+name, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const allGroups, noGroup = "0 2147483647", "1 0"
	sysctl(t, "net/ipv4/icmp_echo_ignore_all", "0")

	t.Run("unprivileged ping socket, kernel's ID", func(t *testing.T) {
		sysctl(t, "net/ipv4/ping_group_range", allGroups)
		for _, tc := range []struct{ url, network string }{{"icmp://127.0.0.1", "udp4"}, {"icmp://[::1]", "udp6"}} {
			if tc.network == "udp6" {
				if c, err := net.ListenPacket("udp6", "[::1]:0"); err != nil {
					t.Logf("SKIPPED ::1: no IPv6 loopback in the namespace: %v", err)
					continue
				} else {
					c.Close()
				}
			}
			c := newICMP(t, ICMPSpec{}, Expect{}, 3*time.Second)
			var network string
			gotID := 0
			c.sent = func(n string, id, _ int, _ []byte) { network, gotID = n, id }
			res := c.Run(context.Background(), Target{URL: tc.url})
			if !res.OK || network != tc.network || gotID <= 0 {
				t.Errorf("%s: ok %v over %q (ID %d), want ok over %s with the kernel's ID: cause %q: %s", tc.url, res.OK, network, gotID, tc.network, res.Cause, res.Err)
			}
		}
	})

	t.Run("raw socket without a ping group", func(t *testing.T) {
		sysctl(t, "net/ipv4/ping_group_range", noGroup)
		c := newICMP(t, ICMPSpec{}, Expect{}, 3*time.Second)
		var network string
		c.sent = func(n string, _, _ int, _ []byte) { network = n }
		res := c.Run(context.Background(), Target{URL: "icmp://127.0.0.1"})
		if !res.OK || network != "ip4:icmp" {
			t.Errorf("ok %v over %q, want ok over ip4:icmp: cause %q: %s", res.OK, network, res.Cause, res.Err)
		}
	})

	forger, err := net.ListenPacket("ip4:icmp", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	rawForger, err := ipv4.NewRawConn(forger)
	if err != nil {
		t.Fatal(err)
	}
	// forge sends an echo reply to 127.0.0.1 as if from src.
	forge := func(t *testing.T, src string, id, seq int, data []byte) {
		t.Helper()
		b, err := (&icmp.Message{Type: ipv4.ICMPTypeEchoReply, Body: &icmp.Echo{ID: id, Seq: seq, Data: data}}).Marshal(nil)
		if err != nil {
			t.Fatal(err)
		}
		h := &ipv4.Header{Version: 4, Len: 20, TotalLen: 20 + len(b), TTL: 64, Protocol: 1,
			Src: net.ParseIP(src), Dst: net.ParseIP("127.0.0.1")}
		if err := rawForger.WriteTo(h, b, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []struct{ name, groups string }{{"raw socket", noGroup}, {"unprivileged ping socket", allGroups}} {
		t.Run("no answer: "+mode.name, func(t *testing.T) {
			sysctl(t, "net/ipv4/ping_group_range", mode.groups)
			sysctl(t, "net/ipv4/icmp_echo_ignore_all", "1")
			defer sysctl(t, "net/ipv4/icmp_echo_ignore_all", "0")
			for _, answer := range []bool{false, true} {
				c := newICMP(t, ICMPSpec{}, Expect{}, 300*time.Millisecond)
				c.sent = func(network string, id, seq int, data []byte) {
					if id < 0 {
						t.Errorf("%s: the ID the kernel gave the socket is unknown", network)
						id = 0
					}
					other := append([]byte{}, data...)
					other[0] ^= 0xff
					forge(t, "127.0.0.1", id, seq+1, data)    // another sequence
					forge(t, "127.0.0.1", id+1, seq, data)    // another ID (a ping socket never sees it)
					forge(t, "127.0.0.1", id, seq, other)     // other data
					forge(t, "127.0.0.2", id, seq, data)      // another sender
					forge(t, "127.0.0.1", id, seq, data[:10]) // cut short
					if answer {
						forge(t, "127.0.0.1", id, seq, data)
					}
				}
				start := time.Now()
				res := c.Run(context.Background(), Target{URL: "icmp://127.0.0.1"})
				elapsed := time.Since(start)
				if answer {
					if !res.OK {
						t.Errorf("with the right reply forged among wrong ones: cause %q: %s", res.Cause, res.Err)
					}
					continue
				}
				const want = "timeout: no echo reply from 127.0.0.1 within 300ms ("
				if res.OK || res.Cause != CauseTimeout || !strings.HasPrefix(res.Err, want) || !strings.Contains(res.Err, "other ICMP messages read past") {
					t.Errorf("no answer: ok %v cause %q: %s\nwant cause timeout: %s…", res.OK, res.Cause, res.Err, want)
				}
				if elapsed < 250*time.Millisecond || elapsed > 2*time.Second {
					t.Errorf("no answer: the run took %v, want about 300ms", elapsed)
				}
				t.Logf("%s: %s", mode.name, res.Err)
			}
		})
	}

	t.Run("icmp error for the request", func(t *testing.T) {
		sysctl(t, "net/ipv4/ping_group_range", noGroup)
		sysctl(t, "net/ipv4/icmp_echo_ignore_all", "1")
		defer sysctl(t, "net/ipv4/icmp_echo_ignore_all", "0")
		c := newICMP(t, ICMPSpec{}, Expect{}, 2*time.Second)
		c.sent = func(_ string, id, seq int, data []byte) {
			// A router's "host unreachable" quoting the request: its IPv4
			// header and the echo header; first one quoting another
			// sequence, which is read past.
			for _, s := range []int{seq + 1, seq} {
				req, _ := (&icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: s, Data: data}}).Marshal(nil)
				h, _ := (&ipv4.Header{Version: 4, Len: 20, TotalLen: 20 + len(req), TTL: 1, Protocol: 1,
					Src: net.ParseIP("127.0.0.1"), Dst: net.ParseIP("127.0.0.1")}).Marshal()
				b, _ := (&icmp.Message{Type: ipv4.ICMPTypeDestinationUnreachable, Code: 1,
					Body: &icmp.DstUnreach{Data: append(h, req[:8]...)}}).Marshal(nil)
				hdr := &ipv4.Header{Version: 4, Len: 20, TotalLen: 20 + len(b), TTL: 64, Protocol: 1,
					Src: net.ParseIP("127.0.0.3"), Dst: net.ParseIP("127.0.0.1")}
				if err := rawForger.WriteTo(hdr, b, nil); err != nil {
					t.Error(err)
				}
			}
		}
		start := time.Now()
		res := c.Run(context.Background(), Target{URL: "icmp://127.0.0.1"})
		const want = "icmp: destination unreachable (host unreachable) from 127.0.0.3 for the echo request to 127.0.0.1"
		if res.Cause != CauseConnect || res.Err != want || time.Since(start) > time.Second {
			t.Errorf("cause %q after %v:\n got %s\nwant %s", res.Cause, time.Since(start), res.Err, want)
		}
		// No route at all (the namespace has only lo): the send fails.
		res = newICMP(t, ICMPSpec{}, Expect{}, 2*time.Second).Run(context.Background(), Target{URL: "icmp://192.0.2.1"})
		if res.Cause != CauseConnect || res.Err != "icmp: sending the echo request to 192.0.2.1 (ip4:icmp socket): network is unreachable" {
			t.Errorf("no route: cause %q: %s", res.Cause, res.Err)
		}
	})

	t.Run("ttl is the request's", func(t *testing.T) {
		for _, groups := range []string{allGroups, noGroup} {
			sysctl(t, "net/ipv4/ping_group_range", groups)
			seq := -1
			c := newICMP(t, ICMPSpec{TTL: 7}, Expect{}, 2*time.Second)
			c.sent = func(_ string, _, s int, _ []byte) { seq = s }
			if res := c.Run(context.Background(), Target{URL: "icmp://127.0.0.1"}); !res.OK {
				t.Fatalf("cause %q: %s", res.Cause, res.Err)
			}
			// The request, looped back, as a raw socket sees it.
			rawForger.SetReadDeadline(time.Now().Add(time.Second))
			ttl := -1
			buf := make([]byte, 1500)
			for i := 0; i < 1000 && ttl < 0; i++ {
				h, p, _, err := rawForger.ReadFrom(buf)
				if err != nil {
					break
				}
				if m, err := icmp.ParseMessage(1, p); err == nil && m.Type == ipv4.ICMPTypeEcho && m.Body.(*icmp.Echo).Seq == seq {
					ttl = h.TTL
				}
			}
			if ttl != 7 {
				t.Errorf("ping_group_range %q: the request's TTL %d, want 7", groups, ttl)
			}
		}
	})

	t.Run("dont_fragment over the MTU", func(t *testing.T) {
		sysctl(t, "net/ipv4/ping_group_range", allGroups)
		if err := setLoopbackMTU(1500); err != nil {
			t.Fatalf("setting lo's MTU: %v", err)
		}
		defer setLoopbackMTU(65536)
		// 1472 + 8 + 20 = 1500 fits; 1473 is fragmented, or with DF refused.
		for _, tc := range []struct {
			spec ICMPSpec
			want string
		}{
			{ICMPSpec{PayloadSize: 1472, DontFragment: true}, ""},
			{ICMPSpec{PayloadSize: 1473}, ""},
			{ICMPSpec{PayloadSize: 1473, DontFragment: true}, "icmp: the echo request to 127.0.0.1 (1481 bytes of ICMP) does not fit the path MTU with dont_fragment: message too long"},
		} {
			res := newICMP(t, tc.spec, Expect{}, 2*time.Second).Run(context.Background(), Target{URL: "icmp://127.0.0.1"})
			if tc.want == "" && !res.OK {
				t.Errorf("%+v: cause %q: %s", tc.spec, res.Cause, res.Err)
			}
			if tc.want != "" && (res.Cause != CauseConnect || res.Err != tc.want) {
				t.Errorf("%+v: cause %q:\n got %s\nwant %s", tc.spec, res.Cause, res.Err, tc.want)
			}
		}
	})

	t.Run("no permission", func(t *testing.T) {
		sysctl(t, "net/ipv4/ping_group_range", noGroup)
		// CAP_NET_RAW leaves this thread (capabilities are per thread),
		// which the goroutine keeps; the thread ends with it.
		runtime.LockOSThread()
		if err := dropCapNetRaw(); err != nil {
			t.Fatalf("dropping CAP_NET_RAW: %v", err)
		}
		res := newICMP(t, ICMPSpec{}, Expect{}, time.Second).Run(context.Background(), Target{URL: "icmp://127.0.0.1"})
		const want = `icmp: no permission to open an ICMP socket: unprivileged ping socket (udp4): permission denied (group 0 is not in net.ipv4.ping_group_range "1 0"); raw socket (ip4:icmp): operation not permitted (needs root or CAP_NET_RAW): run as root, grant CAP_NET_RAW, or widen net.ipv4.ping_group_range`
		if res.OK || res.Cause != CauseAgent || !res.Cause.AgentFault() || res.Err != want {
			t.Errorf("ok %v cause %q:\n got %s\nwant %s", res.OK, res.Cause, res.Err, want)
		}
	})
}

// loopbackUp sets lo up (a new network namespace starts with it down).
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr [40]byte
	copy(ifr[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return e
	}
	*(*uint16)(unsafe.Pointer(&ifr[16])) |= syscall.IFF_UP | syscall.IFF_RUNNING
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return e
	}
	return nil
}

// setLoopbackMTU sets lo's MTU.
func setLoopbackMTU(mtu int) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr [40]byte
	copy(ifr[:], "lo")
	*(*int32)(unsafe.Pointer(&ifr[16])) = int32(mtu)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFMTU, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return e
	}
	return nil
}

// dropCapNetRaw removes CAP_NET_RAW from the calling thread's effective
// capabilities.
func dropCapNetRaw() error {
	const capNetRaw = 13
	hdr := struct {
		version uint32
		pid     int32
	}{version: 0x20080522} // _LINUX_CAPABILITY_VERSION_3
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	data[0].effective &^= 1 << capNetRaw
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	return nil
}
