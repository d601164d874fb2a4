// Command knode-image wraps one binary into an OCI image with coldstart's
// image code (builds.BuildImage: the binary as /server, user 65532, on an
// empty base) and writes it as DIR/NAME.image.tar named TAG, for
// scripts/knative-node.sh to import into containerd: the sandbox image,
// Knative's components and the arms' binaries. It prints the image's
// digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/coldstart-go/coldstart/builds"
)

func main() {
	bin := flag.String("bin", "", "the binary")
	tag := flag.String("tag", "", "the image's name, e.g. dev.local/knative/queue:v0.42.2")
	dir := flag.String("dir", "", "directory for NAME.image.tar and NAME.oci/")
	flag.Parse()
	if *bin == "" || *tag == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "knode-image: -bin, -tag and -dir are required")
		os.Exit(2)
	}
	a, err := builds.BinaryArtifact(*bin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "knode-image: %v\n", err)
		os.Exit(1)
	}
	r, err := builds.BuildImage(context.Background(), a, builds.ImageOptions{Dir: *dir, Tag: *tag})
	if err != nil {
		fmt.Fprintf(os.Stderr, "knode-image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s %s\n", r.Tag, r.Artifact.Digest, r.Tarball)
}
