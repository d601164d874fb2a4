# syntax=docker/dockerfile:1
#
# The sample server as a container image, for users who build with a Docker
# daemon (docker build -t coldstart/echo .). It matches what coldstart's own
# daemonless image arm (builds/image.go) produces: a static binary at /server
# as the entrypoint, user 65532:65532, port 8080 exposed and in $PORT.
# builds/dockerfile_test.go checks that the two agree.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The static arm's flags.
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/server ./examples/echo

FROM scratch
COPY --from=build --chmod=0755 /out/server /server
USER 65532:65532
ENV PORT=8080
EXPOSE 8080/tcp
ENTRYPOINT ["/server"]
