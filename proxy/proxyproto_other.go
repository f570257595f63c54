//go:build !unix

package proxy

import (
	"errors"
	"net"
)

func peekPPHeader(net.Conn) (int, *net.TCPAddr, error) {
	return 0, nil, errors.New("proxy_protocol: only on unix systems")
}
