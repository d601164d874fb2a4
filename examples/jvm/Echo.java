// Echo is a small JVM HTTP server written against the JDK alone
// (com.sun.net.httpserver), for coldstart's bring-your-own-server runs: the
// case where restoring a warmed snapshot beats starting fresh.
//
// It listens on 127.0.0.1:$PORT and answers
//   GET  /healthz  200 "ok"
//   POST /echo     200 with the request body
// and stops on SIGTERM (the JVM's shutdown hook).
//
// Build and run:  javac -d out examples/jvm/Echo.java && PORT=8080 java -XX:-UsePerfData -cp out Echo
// (-XX:-UsePerfData: no /tmp/hsperfdata_* file, one mapped file less for a checkpoint.)
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

public final class Echo {
    public static void main(String[] args) throws IOException {
        String port = System.getenv("PORT");
        if (port == null || port.isEmpty()) {
            System.err.println("echo: set $PORT");
            System.exit(2);
        }
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(port)), 1024);
        server.createContext("/healthz", ex -> reply(ex, 200, "ok\n".getBytes(StandardCharsets.UTF_8)));
        server.createContext("/echo", ex -> {
            if (!"POST".equals(ex.getRequestMethod())) {
                reply(ex, 405, "POST a body\n".getBytes(StandardCharsets.UTF_8));
                return;
            }
            reply(ex, 200, ex.getRequestBody().readAllBytes());
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> server.stop(0)));
        server.start();
    }

    private static void reply(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "text/plain");
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }
}
