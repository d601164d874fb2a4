package grpcschema

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/metadata"
)

// ParseMetadata reads request metadata given as key=value pairs (a key may
// repeat). Keys are lowercased, as gRPC sends them, and must be valid
// header names not starting with ":" or "grpc-" (reserved); a key ending in
// "-bin" is binary metadata, its value sent base64-encoded.
func ParseMetadata(pairs []string) (metadata.MD, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	md := metadata.MD{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			// The entry is not quoted: "authorization: Bearer ..." holds a
			// secret.
			return nil, fmt.Errorf("an entry without a key before \"=\": want key=value")
		}
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") {
			return nil, fmt.Errorf("key %q is reserved by gRPC", k)
		}
		for _, r := range k {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
				return nil, fmt.Errorf("key %q: only a-z, 0-9, '-', '_' and '.' may appear in a metadata key", k)
			}
		}
		md.Append(k, v)
	}
	return md, nil
}

// Keys are md's keys, sorted: what a result may record (values are often
// secrets and are never written).
func Keys(md metadata.MD) []string {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
