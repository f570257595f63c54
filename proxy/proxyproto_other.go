//go:build !unix

package proxy

import (
	"errors"
	"net"
)

func peekPPHeader(net.Conn) (int, *net.TCPAddr, int, error) {
	return 0, nil, 0, errors.New("proxy_protocol: only on unix systems")
}
