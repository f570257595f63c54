package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// peer is a reverse proxy the scenarios compare vigil with, configured with
// its best health-check settings for the same origins.
type peer struct {
	name, bin string
	// note states the settings in the scenario table's legend.
	note string
	// args and config build the command line and config file.
	config func(dir string, port int, o scenarioOrigins) string
	args   func(dir, file string) []string
	file   string
	// outB, when set, reads whether the peer itself holds origin-b out of
	// rotation (its own health state), so its row can be measured like
	// vigil's.
	outB func(dir string) (bool, error)
}

var scenarioPeers = []peer{
	{
		name: "nginx", bin: "/usr/sbin/nginx", file: "nginx.conf",
		note: "OSS nginx: passive only (`max_fails=2 fail_timeout=5s`), `proxy_next_upstream error timeout http_502 http_503 http_504`, 3 tries, connect 300ms, read 1.5s",
		config: func(dir string, port int, o scenarioOrigins) string {
			user := ""
			if os.Geteuid() == 0 {
				user = "user root;"
			}
			var up strings.Builder
			for _, x := range o {
				fmt.Fprintf(&up, "    server %s max_fails=2 fail_timeout=5s;\n", x.Addr())
			}
			return fmt.Sprintf(`%s
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[2]s/body;
  proxy_temp_path %[2]s/proxy;
  fastcgi_temp_path %[2]s/fastcgi;
  uwsgi_temp_path %[2]s/uwsgi;
  scgi_temp_path %[2]s/scgi;
  upstream origins {
%[3]s    keepalive 32;
  }
  server {
    listen 127.0.0.1:%[4]d;
    location / {
      proxy_pass http://origins;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffers 32 8k;
      proxy_next_upstream error timeout http_502 http_503 http_504;
      proxy_next_upstream_tries 3;
      proxy_next_upstream_timeout 4s;
      proxy_connect_timeout 300ms;
      proxy_read_timeout 1500ms;
      proxy_send_timeout 1500ms;
    }
  }
}
`, user, dir, up.String(), port)
		},
		args: func(dir, file string) []string {
			return []string{"-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", file, "-g", "daemon off;"}
		},
	},
	{
		name: "haproxy", bin: "/usr/sbin/haproxy", file: "haproxy.cfg",
		note: "HAProxy: active `GET /healthz` + `GET /asset.bin` expecting 200 and an `Access-Control-Allow-Origin` header, `inter 1s fall 2 rise 2`, passive `observe layer7 error-limit 5 on-error mark-down`, `retry-on conn-failure empty-response response-timeout 503`, `option redispatch`, `http-request disable-l7-retry if METH_POST`",
		config: func(dir string, port int, o scenarioOrigins) string {
			var srv strings.Builder
			for i, x := range o {
				fmt.Fprintf(&srv, "  server %s %s\n", scenarioOriginNames[i], x.Addr())
			}
			return fmt.Sprintf(`global
  maxconn 2000
  stats socket %s/haproxy.sock mode 600 level user
defaults
  mode http
  timeout connect 300ms
  timeout client 10s
  timeout server 1500ms
  timeout check 800ms
  retries 2
  option redispatch 1
  retry-on conn-failure empty-response response-timeout 503
frontend fe
  bind 127.0.0.1:%d
  http-request disable-l7-retry if METH_POST
  default_backend be
backend be
  balance roundrobin
  option httpchk
  http-check connect
  http-check send meth GET uri /healthz
  http-check expect status 200
  http-check connect
  http-check send meth GET uri /asset.bin
  http-check expect status 200
  http-check connect
  http-check send meth GET uri /asset.bin
  http-check expect hdr name access-control-allow-origin
  default-server check inter 1s fall 2 rise 2 observe layer7 error-limit 5 on-error mark-down
%s`, dir, port, srv.String())
		},
		args: func(dir, file string) []string { return []string{"-f", file, "-db"} },
		outB: haproxyOutB,
	},
	{
		name: "caddy", bin: "/usr/bin/caddy", file: "Caddyfile",
		note: "Caddy: active `health_uri /asset.bin` (one URI per upstream set; deeper than /healthz) `health_status 200`, `health_interval 1s`, passive `max_fails 2 fail_duration 10s unhealthy_status 5xx unhealthy_latency 1s`, `lb_try_duration 4s`",
		config: func(dir string, port int, o scenarioOrigins) string {
			return fmt.Sprintf(`{
	admin off
	auto_https off
	storage file_system %s/data
}
http://127.0.0.1:%d {
	reverse_proxy %s %s %s {
		lb_policy round_robin
		lb_try_duration 4s
		lb_try_interval 100ms
		health_uri /asset.bin
		health_interval 1s
		health_timeout 800ms
		health_status 200
		fail_duration 10s
		max_fails 2
		unhealthy_status 5xx
		unhealthy_latency 1s
		transport http {
			dial_timeout 300ms
			response_header_timeout 1500ms
		}
	}
}
`, dir, port, o[0].Addr(), o[1].Addr(), o[2].Addr())
		},
		args: func(dir, file string) []string { return []string{"run", "--config", file, "--adapter", "caddyfile"} },
	},
}

// peerAvailable reports whether the peer's binary is installed.
func (p peer) available() error {
	if _, err := os.Stat(p.bin); err != nil {
		return fmt.Errorf("%s: %w", p.bin, err)
	}
	return nil
}

// runningPeer is a started peer process.
type runningPeer struct {
	cmd    *exec.Cmd
	url    string
	log    string
	exited chan struct{}
}

// stop ends the process (SIGTERM, then SIGKILL to its process group after
// 5s) and waits for it.
func (rp *runningPeer) stop() {
	pid := rp.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-rp.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-rp.exited
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start writes the config into dir, starts the process and waits until it
// answers through to the origins.
func (p peer) start(dir string, o scenarioOrigins) (*runningPeer, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		file := filepath.Join(dir, p.file)
		if err := os.WriteFile(file, []byte(p.config(dir, port, o)), 0o600); err != nil {
			return nil, err
		}
		logPath := filepath.Join(dir, p.name+".out")
		lf, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(p.bin, p.args(dir, file)...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = lf, lf
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			lf.Close()
			return nil, err
		}
		lf.Close()
		rp := &runningPeer{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), log: logPath}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		ready := false
		client := &http.Client{Timeout: time.Second}
	wait:
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
			select {
			case <-exited:
				break wait
			default:
			}
			if resp, err := client.Get(rp.url + "/api/ready"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ready = true
					break wait
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		rp.exited = exited
		if ready {
			return rp, nil
		}
		rp.stop()
		out, _ := os.ReadFile(logPath)
		lastErr = fmt.Errorf("%s did not come up on port %d: %s", p.name, port, strings.TrimSpace(string(out)))
	}
	return nil, lastErr
}

// haproxyOutB reads origin-b's status from HAProxy's stats socket
// ("show stat": UP, DOWN, UP 1/2, DOWN 1/2, …); out means DOWN or MAINT.
func haproxyOutB(dir string) (bool, error) {
	c, err := net.DialTimeout("unix", filepath.Join(dir, "haproxy.sock"), time.Second)
	if err != nil {
		return false, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("show stat\n")); err != nil {
		return false, err
	}
	r := csv.NewReader(bufio.NewReader(c))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return false, err
	}
	status := -1
	for _, rec := range recs {
		if len(rec) > 0 && strings.HasPrefix(rec[0], "# ") {
			rec[0] = strings.TrimPrefix(rec[0], "# ")
			for i, f := range rec {
				if f == "status" {
					status = i
				}
			}
			continue
		}
		if status >= 0 && len(rec) > status && rec[0] == "be" && rec[1] == "origin-b" {
			st := rec[status]
			return strings.HasPrefix(st, "DOWN") || strings.HasPrefix(st, "MAINT"), nil
		}
	}
	return false, fmt.Errorf("haproxy show stat: no be/origin-b row")
}
