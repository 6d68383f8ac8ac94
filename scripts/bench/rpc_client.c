/* The round-trip loops of side_by_side.py in C, so that the client's own cost (Python's, about 30-40 us per round
 * trip on the 2-core benchmark machine) does not hide the agents' difference. side_by_side.py compiles it with `cc`
 * into its temporary directory and runs it on the pipes of an agent it started (the same agent, flags and
 * environment as its Python loops).
 *
 *   rpc_client sequential|pipelined <fd to the agent's stdin> <fd from its stdout> <n> <type>
 *
 * sequential: n times, write {"id":i,"type":<type>} and read lines until the response with that id.
 * pipelined:  a thread writes all n requests while the main thread reads until n responses arrived.
 * Prints the rate (requests per second). A response is a line containing "type":"response" (and, sequentially,
 * "id":i,); `type` is get_state for an agent and "response" for `cat` (each line echoed: the client's floor).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int in_fd, out_fd;
static long n_req;
static const char *req_type;

static char *buf;
static size_t cap = 1 << 20, start, end;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void write_all(const char *p, size_t len) {
    while (len > 0) {
        ssize_t w = write(in_fd, p, len);
        if (w <= 0) {
            perror("write");
            exit(1);
        }
        p += w;
        len -= (size_t)w;
    }
}

/* The next line (without its LF, NUL-terminated in place); exits at EOF. */
static char *next_line(void) {
    for (;;) {
        char *lf = memchr(buf + start, '\n', end - start);
        if (lf) {
            char *line = buf + start;
            *lf = 0;
            start = (size_t)(lf - buf) + 1;
            return line;
        }
        if (start > 0) {
            memmove(buf, buf + start, end - start);
            end -= start;
            start = 0;
        }
        if (end == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t r = read(out_fd, buf + end, cap - end);
        if (r <= 0) {
            fprintf(stderr, "agent closed stdout\n");
            exit(1);
        }
        end += (size_t)r;
    }
}

/* Whether `line` is a response (with `want` in it, if given). Like the Python loop, only its first 300 bytes are
 * searched: both implementations put the type and id first. */
static int is_response(const char *line, const char *want) {
    char head[301];
    size_t len = strnlen(line, 300);
    memcpy(head, line, len);
    head[len] = 0;
    return strstr(head, "\"type\":\"response\"") != NULL && (!want || strstr(head, want) != NULL);
}

static size_t request(char *out, long i) {
    return (size_t)sprintf(out, "{\"id\":%ld,\"type\":\"%s\"}\n", i, req_type);
}

static void *writer(void *arg) {
    (void)arg;
    size_t size = 64 * (size_t)n_req + 64, len = 0;
    char *all = malloc(size);
    for (long i = 0; i < n_req; i++) len += request(all + len, i);
    write_all(all, len);
    free(all);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s sequential|pipelined IN_FD OUT_FD N TYPE\n", argv[0]);
        return 2;
    }
    in_fd = atoi(argv[2]);
    out_fd = atoi(argv[3]);
    n_req = atol(argv[4]);
    req_type = argv[5];
    buf = malloc(cap);
    double t0 = now();
    if (strcmp(argv[1], "sequential") == 0) {
        char req[128], want[64];
        for (long i = 0; i < n_req; i++) {
            write_all(req, request(req, i));
            sprintf(want, "\"id\":%ld,", i);
            for (;;) {
                char *line = next_line();
                if (is_response(line, want)) break;
            }
        }
    } else {
        pthread_t t;
        pthread_create(&t, NULL, writer, NULL);
        long got = 0;
        while (got < n_req)
            if (is_response(next_line(), NULL)) got++;
        pthread_join(t, NULL);
    }
    printf("%f\n", n_req / (now() - t0));
    return 0;
}
