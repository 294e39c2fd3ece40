/*
 * msb/unix_socket.h — unix stream sockets named by a path: what a boundary (or a relay)
 * listens on for the host, and what the host connects to. Only system calls, so a child that
 * shares the host's memory (msb/spawn.h) may call them.
 */
#ifndef MSB_UNIX_SOCKET_H
#define MSB_UNIX_SOCKET_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A listening socket at `path`, close-on-exec, replacing a file left there (a socket of an
 * earlier run). The socket file's mode follows the caller's umask. -1 with errno:
 * ENAMETOOLONG when `path` does not fit a socket address.
 */
int msb_unix_listen(const char *path);

/*
 * The same, the socket file owner-only (mode 0600: whoever can connect to an agent can run
 * commands as it). It sets the umask around the bind and restores it, so call it only where
 * the umask is the caller's alone: a single-threaded program, or a child that shares no
 * file-system context with the host (msb/spawn.h's children do not).
 */
int msb_unix_listen_owner_only(const char *path);

/* A close-on-exec socket connected to `path`; -1 with errno. */
int msb_unix_connect(const char *path);

#ifdef __cplusplus
}
#endif

#endif
