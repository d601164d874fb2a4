package record

import "testing"

func TestModuleOf(t *testing.T) {
	m := Modules{Main: "example.com/app", Deps: map[string]string{
		"google.golang.org/grpc": "v1.85.0", "google.golang.org/grpc/security/advancedtls": "v1.0.0",
		"golang.org/x/net": "v0.40.0",
	}}
	tests := map[string]string{
		"example.com/app":                               "example.com/app",
		"example.com/app/internal/x":                    "example.com/app",
		"example.com/application":                       UnattributedModule,
		"google.golang.org/grpc/health":                 "google.golang.org/grpc",
		"google.golang.org/grpc/security/advancedtls/x": "google.golang.org/grpc/security/advancedtls",
		"golang.org/x/net/http2":                        "golang.org/x/net",
		"net/http":                                      StdModule,
		"vendor/golang.org/x/net/http2/hpack":           StdModule,
		"main":                                          UnattributedModule,
	}
	for pkg, want := range tests {
		if got := moduleOf(m, pkg); got != want {
			t.Errorf("moduleOf(%q) = %q, want %q", pkg, got, want)
		}
	}
	if got := moduleOf(Modules{}, "net/http"); got != StdModule {
		t.Errorf("without build info, moduleOf(net/http) = %q, want %q", got, StdModule)
	}
	if got := moduleOf(Modules{}, "github.com/x/y"); got != UnattributedModule {
		t.Errorf("without build info, moduleOf(github.com/x/y) = %q, want %q", got, UnattributedModule)
	}
}
