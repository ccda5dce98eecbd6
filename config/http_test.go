package config_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
)

func TestMaskURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"postgres://mull:hunter2@db:5432/mull", "postgres://mull:xxxxx@db:5432/mull"},
		{"postgres://mull@/mull?host=/tmp&password=hunter2&sslmode=disable", "postgres://mull@/mull?host=/tmp&password=xxxxx&sslmode=disable"},
		{"postgresql://u:p%40ss@h/db?sslpassword=hunter2", "postgresql://u:xxxxx@h/db?sslpassword=xxxxx"},
		{"postgres://h/db?PASSWORD=hunter2", "postgres://h/db?PASSWORD=xxxxx"},
		{"host=db user=mull password=hunter2 dbname=mull", "host=db user=mull password=xxxxx dbname=mull"},
		{"host=db password='hun ter2' dbname=mull", "host=db password=xxxxx dbname=mull"},
		{"postgres://mull@db/mull", "postgres://mull@db/mull"},
		{"sqlite:/var/mull.db", "sqlite:/var/mull.db"},
		{"", ""},
	} {
		got := config.MaskURL(tt.in)
		if got != tt.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "hun ter2") {
			t.Errorf("MaskURL(%q) leaks the password: %q", tt.in, got)
		}
	}
}

func TestConfigPrintMasksQueryPasswords(t *testing.T) {
	c, err := config.Load(config.Source{Environ: []string{"MULL_DATABASE_URL=postgres://u@/db?host=/tmp&password=hunter2", "MULL_ADMIN_TOKEN=tok-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Print()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "tok-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("config print shows %q:\n%s", secret, out)
		}
	}
}

func TestHTTPHosts(t *testing.T) {
	c, err := config.Load(config.Source{Environ: []string{"MULL_HTTP_ALLOWED_HOSTS=mull.lan, box:8080", "MULL_HTTP_INSECURE_LISTEN=true"}})
	if err != nil {
		t.Fatal(err)
	}
	if !c.HTTP.InsecureListen || len(c.HTTP.AllowedHosts) != 2 {
		t.Fatalf("http = %+v", c.HTTP)
	}
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:7788": true, "127.0.0.1": true, "127.9.9.9:80": true, "[::1]:7788": true, "[::1]": true,
		"mull.lan": true, "mull.lan:7788": true, "MULL.LAN": true, "box:8080": true,
		"box:9090": false, "box": false, "evil.example": false, "localhost.evil.example": false, "10.0.0.1:7788": false,
		"": false, "0.0.0.0:7788": false, "127.0.0.1.evil.example": false,
	} {
		if got := c.HTTP.HostAllowed(host); got != want {
			t.Errorf("HostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	for _, bad := range []string{"http://mull.lan", "mull.lan/x", "a b", ""} {
		_, err := config.Load(config.Source{File: write(t, "[http]\nallowed_hosts = [\""+bad+"\"]\n")})
		if err == nil || !strings.Contains(err.Error(), "http.allowed_hosts") {
			t.Errorf("allowed_hosts %q: err %v, want one naming http.allowed_hosts", bad, err)
		}
	}
}
