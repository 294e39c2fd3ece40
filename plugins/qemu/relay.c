/*
 * plugins/qemu/relay.c — the frame relay between agent.sock and a VM's virtio-serial stream
 * (see relay.h for why it exists): the body of the msb-qemu-relay program (relay_main.c),
 * which relay_spawn.c starts.
 *
 * One request per port at a time: read a client's whole frame, write it to a free port (each
 * port has its own agent in the guest), and when that port's reply arrives, hand it back. A
 * streamed exec is one exchange of several frames: the port's OUTPUT frames go to its client
 * as they come and the client's INPUT frames to its port, until the frame with the reply
 * bit frees the port. A slow exec holds one port; the other ports keep serving. A client that sends a frame of another protocol version
 * is answered here with the agent's own refusal shape (ERRC, MESSAGE, VERSION) and dropped,
 * so a refused peer never makes the guest drop the stream everyone shares.
 */
#include "relay.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <msb/agent.h>

#define MAX_CLIENTS 64
/* A client gets this long to deliver the rest of a frame it started; then it is dropped. */
#define CLIENT_STALL_MS 10000

static unsigned char *frame; /* header + payload, MSB_AGENT_HEADER_SIZE + MAX_PAYLOAD, mmap'ed */

static void put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Read exactly `len` bytes; `stall_ms` < 0 waits forever. false on EOF, error or stall. */
static bool read_all(int fd, unsigned char *buf, size_t len, int stall_ms)
{
	size_t got = 0;
	while (got < len) {
		if (stall_ms >= 0) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int n = poll(&p, 1, stall_ms);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return false;
		}
		ssize_t r = read(fd, buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

static bool write_all(int fd, const unsigned char *buf, size_t len)
{
	size_t put = 0;
	while (put < len) {
		ssize_t w = send(fd, buf + put, len - put, MSG_NOSIGNAL);
		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, buf + put, len - put);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		put += (size_t)w;
	}
	return true;
}

/* Append one field to the frame being built at `at`; returns the new end. */
static size_t field(size_t at, uint16_t tag, const void *value, uint32_t len)
{
	put_le(frame + at, tag, 2);
	put_le(frame + at + 2, len, 4);
	memcpy(frame + at + 6, value, len);
	return at + 6 + len;
}

static void header(uint16_t type, uint32_t id, size_t payload_len)
{
	put_le(frame, MSB_AGENT_MAGIC, 4);
	put_le(frame + 4, MSB_AGENT_PROTOCOL_VERSION, 2);
	put_le(frame + 6, type, 2);
	put_le(frame + 8, id, 4);
	put_le(frame + 12, payload_len, 4);
}

/* Read the guest's reply into `frame`; its total size, or 0 when the stream broke. */
static size_t read_reply(int rfd)
{
	if (!read_all(rfd, frame, MSB_AGENT_HEADER_SIZE, -1))
		return 0;
	uint64_t len = get_le(frame + 12, 4);
	if (get_le(frame, 4) != MSB_AGENT_MAGIC || len > MSB_AGENT_MAX_PAYLOAD)
		return 0;
	if (!read_all(rfd, frame + MSB_AGENT_HEADER_SIZE, (size_t)len, -1))
		return 0;
	return MSB_AGENT_HEADER_SIZE + (size_t)len;
}

/* The HELLO every port is greeted with, built in `frame`; its size. */
static size_t hello_frame(void)
{
	unsigned char v[4];
	put_le(v, MSB_AGENT_PROTOCOL_VERSION, 4);
	size_t end = field(MSB_AGENT_HEADER_SIZE, MSB_TAG_VERSION, v, 4);
	header(MSB_AGENT_HELLO, 0, end - MSB_AGENT_HEADER_SIZE);
	return end;
}

/* Read a port's answer to HELLO: true when it is a HELLO reply opening with ERRC MSB_OK. */
static bool greeted(int rfd)
{
	size_t n = read_reply(rfd);
	/* The reply opens with ERRC: tag 1, length 4, value 0. */
	return n >= MSB_AGENT_HEADER_SIZE + 10 &&
	       get_le(frame + 6, 2) == (MSB_AGENT_HELLO | MSB_AGENT_REPLY) &&
	       get_le(frame + 16, 2) == MSB_TAG_ERRC && get_le(frame + 18, 4) == 4 &&
	       get_le(frame + 22, 4) == MSB_OK;
}

static void refuse_version(int client, uint16_t type, uint32_t id)
{
	static const char text[] = "agent protocol: a peer speaking another version refused by "
				   "the msb qemu relay, which speaks version 2";
	_Static_assert(MSB_AGENT_PROTOCOL_VERSION == 2, "update the refusal's sentence");
	unsigned char u[4];
	put_le(u, MSB_E_PROTOCOL, 4);
	size_t end = field(MSB_AGENT_HEADER_SIZE, MSB_TAG_ERRC, u, 4);
	end = field(end, MSB_TAG_MESSAGE, text, sizeof text - 1);
	put_le(u, MSB_AGENT_PROTOCOL_VERSION, 4);
	end = field(end, MSB_TAG_VERSION, u, 4);
	header((uint16_t)(type | MSB_AGENT_REPLY), id, end - MSB_AGENT_HEADER_SIZE);
	write_all(client, frame, end);
}

/*
 * Read one frame from `client` into `frame`; its size, or 0 when the client is done (closed,
 * broke framing, stalled, or was refused).
 */
static size_t read_client_frame(int client)
{
	if (!read_all(client, frame, MSB_AGENT_HEADER_SIZE, CLIENT_STALL_MS))
		return 0;
	uint64_t len = get_le(frame + 12, 4);
	if (get_le(frame, 4) != MSB_AGENT_MAGIC || len > MSB_AGENT_MAX_PAYLOAD)
		return 0;
	if (get_le(frame + 4, 2) != MSB_AGENT_PROTOCOL_VERSION) {
		refuse_version(client, (uint16_t)get_le(frame + 6, 2), (uint32_t)get_le(frame + 8, 4));
		return 0;
	}
	if (!read_all(client, frame + MSB_AGENT_HEADER_SIZE, (size_t)len, CLIENT_STALL_MS))
		return 0;
	return MSB_AGENT_HEADER_SIZE + (size_t)len;
}

static uint16_t frame_type(void)
{
	return (uint16_t)get_le(frame + 6, 2);
}

static uint32_t frame_id(void)
{
	return (uint32_t)get_le(frame + 8, 4);
}

/* Hand `len` bytes of `frame` to a port; the guest's stream broken is the relay's end. */
static void to_port(int port_fd, size_t len)
{
	if (!write_all(port_fd, frame, len))
		_exit(0);
}

/* The INPUT that ends a streamed exec's stdin, for a client that went away during it. */
static void stdin_eof_to_port(int port_fd, uint32_t id)
{
	unsigned char one[4];
	put_le(one, 1, 4);
	size_t end = field(MSB_AGENT_HEADER_SIZE, MSB_TAG_EOF, one, 4);
	header(MSB_AGENT_INPUT, id, end - MSB_AGENT_HEADER_SIZE);
	to_port(port_fd, end);
}

/*
 * One port: an agent's stream, where its greeting stands, and the client whose request it
 * is serving (-1: none). Only a greeted port is handed requests; one whose greeting failed
 * is closed and never used.
 */
typedef enum port_state { PORT_GREETING, PORT_GREETED, PORT_DROPPED } port_state;
/* A port's client: a slot, free, or gone in the middle of an exchange (drained to its end). */
#define PORT_FREE (-1)
#define PORT_ORPHANED (-2)
typedef struct relay_port {
	int fd;
	port_state state;
	int client;
	uint32_t id;  /* the request the port serves */
} relay_port;

/* Drop a port whose greeting failed; _exit when none is left to serve or to wait for. */
static void drop_port(relay_port *ports, size_t n_ports, size_t p, int ready_fd)
{
	close(ports[p].fd);
	ports[p].state = PORT_DROPPED;
	for (size_t i = 0; i < n_ports; i++)
		if (ports[i].state != PORT_DROPPED)
			return;
	if (ready_fd >= 0) {
		ssize_t w = write(ready_fd, "F", 1);
		(void)w;
	}
	_exit(1);
}

/*
 * After 'R', the word that every port has answered its HELLO ('A'; 'P' when some were
 * dropped), then the pipe is closed: a template is saved only once no greeting is in
 * flight (a HELLO left unanswered in a saved guest is answered again in every clone).
 * Returns the ready fd, or -1 once it was closed.
 */
static int say_all_answered(const relay_port *ports, size_t n_ports, int ready_fd)
{
	if (ready_fd < 0)
		return -1;
	bool dropped = false;
	for (size_t i = 0; i < n_ports; i++) {
		if (ports[i].state == PORT_GREETING)
			return ready_fd;
		dropped |= ports[i].state == PORT_DROPPED;
	}
	ssize_t w = write(ready_fd, dropped ? "P" : "A", 1);
	(void)w;
	close(ready_fd);
	return -1;
}

/*
 * A frame from a client whose request a port is serving: the INPUT of its streamed exec,
 * handed on. Anything else — or the client's end — leaves the exchange to run out unheard:
 * the port's command gets end of file on its stdin, and what it still says is drained.
 */
static void serve_busy_client(relay_port *ports, size_t n_ports, int *clients, bool *busy, int c)
{
	size_t p = 0;
	while (p < n_ports && ports[p].client != c)
		p++;
	if (p == n_ports)
		return;
	size_t len = read_client_frame(clients[c]);
	if (len && (frame_type() == MSB_AGENT_INPUT || frame_type() == MSB_AGENT_RESIZE) &&
	    frame_id() == ports[p].id) {
		to_port(ports[p].fd, len);
		return;
	}
	close(clients[c]);
	clients[c] = -1;
	busy[c] = false;
	ports[p].client = PORT_ORPHANED;
	stdin_eof_to_port(ports[p].fd, ports[p].id);
}

void msb_qemu_relay_run(int listen_fd, const int *port_fds, size_t n_ports, int ready_fd)
{
	signal(SIGPIPE, SIG_IGN);
	frame = mmap(NULL, MSB_AGENT_HEADER_SIZE + MSB_AGENT_MAX_PAYLOAD, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (frame == MAP_FAILED || n_ports == 0 || n_ports > MSB_QEMU_RELAY_MAX_PORTS) {
		ssize_t w = write(ready_fd, "F", 1);
		(void)w;
		_exit(1);
	}
	/*
	 * Every port gets its HELLO now; the guest starts its agents one after another, so the
	 * answers come in over the first command's time. The first good answer makes the VM
	 * ready ('R'): the first request needs one agent, not all of them, and waiting for the
	 * last would put every agent's start on the boot's critical path.
	 */
	relay_port ports[MSB_QEMU_RELAY_MAX_PORTS];
	bool said_ready = false;
	size_t hello_len = hello_frame();
	for (size_t i = 0; i < n_ports; i++)
		ports[i] = (relay_port){ .fd = port_fds[i], .state = PORT_GREETING, .client = PORT_FREE };
	for (size_t i = 0; i < n_ports; i++)
		if (!write_all(ports[i].fd, frame, hello_len))
			drop_port(ports, n_ports, i, ready_fd);

	/* Client slots: fd -1 is free; busy[i] while its request is at a port. */
	int clients[MAX_CLIENTS];
	bool busy[MAX_CLIENTS] = { false };
	for (size_t i = 0; i < MAX_CLIENTS; i++)
		clients[i] = -1;
	size_t next = 0;
	for (;;) {
		struct pollfd fds[1 + MSB_QEMU_RELAY_MAX_PORTS + MAX_CLIENTS];
		int who[1 + MSB_QEMU_RELAY_MAX_PORTS + MAX_CLIENTS]; /* client slot, or -1 */
		size_t n = 0, free_ports = 0, n_clients = 0;
		for (size_t i = 0; i < MAX_CLIENTS; i++)
			n_clients += clients[i] >= 0;
		fds[n] = (struct pollfd){ .fd = listen_fd, .events = n_clients < MAX_CLIENTS ? POLLIN : 0 };
		who[n++] = -1;
		/*
		 * A free port that speaks means its stream ended: poll every port (a dropped one
		 * as fd -1, which poll skips).
		 */
		for (size_t p = 0; p < n_ports; p++) {
			bool live = ports[p].state != PORT_DROPPED;
			fds[n] = (struct pollfd){ .fd = live ? ports[p].fd : -1, .events = POLLIN };
			who[n++] = -1;
			free_ports += ports[p].state == PORT_GREETED && ports[p].client == PORT_FREE;
		}
		/* Idle clients only while a port is free: the rest wait in their sockets. */
		for (size_t k = 0; free_ports && k < MAX_CLIENTS; k++) {
			size_t i = (next + k) % MAX_CLIENTS;
			if (clients[i] < 0 || busy[i])
				continue;
			fds[n] = (struct pollfd){ .fd = clients[i], .events = POLLIN };
			who[n++] = (int)i;
		}
		/* A busy client is heard too: a streamed exec's INPUT goes to its port as it comes. */
		for (size_t i = 0; i < MAX_CLIENTS; i++) {
			if (clients[i] < 0 || !busy[i])
				continue;
			fds[n] = (struct pollfd){ .fd = clients[i], .events = POLLIN };
			who[n++] = (int)i;
		}
		if (poll(fds, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		for (size_t p = 0; p < n_ports; p++) {
			if (!fds[1 + p].revents)
				continue;
			if (ports[p].state == PORT_GREETING) {
				if (!greeted(ports[p].fd)) {
					drop_port(ports, n_ports, p, said_ready ? -1 : ready_fd);
					ready_fd = said_ready ? say_all_answered(ports, n_ports, ready_fd)
							      : ready_fd;
					continue;
				}
				ports[p].state = PORT_GREETED;
				if (!said_ready && ready_fd >= 0) {
					ssize_t w = write(ready_fd, "R", 1);
					(void)w;
					said_ready = true;
				}
				ready_fd = say_all_answered(ports, n_ports, ready_fd);
				continue;
			}
			int c = ports[p].client;
			if (c == PORT_FREE)
				_exit(0);
			size_t len = read_reply(ports[p].fd);
			if (len == 0)
				_exit(0);
			/*
			 * A streamed exec answers with OUTPUT frames before its reply: the exchange
			 * (and the port) lasts until a frame with the reply bit. The client may
			 * have given up waiting; what the port says is drained either way.
			 */
			bool last = frame_type() & MSB_AGENT_REPLY;
			if (c >= 0 && !write_all(clients[c], frame, len)) {
				close(clients[c]);
				clients[c] = -1;
				busy[c] = false;
				if (!last)
					stdin_eof_to_port(ports[p].fd, ports[p].id);
				ports[p].client = c = PORT_ORPHANED;
			}
			if (last) {
				if (c >= 0)
					busy[c] = false;
				ports[p].client = PORT_FREE;
			}
		}
		for (size_t j = 1 + n_ports; j < n; j++) {
			int c = who[j];
			if (!fds[j].revents || clients[c] < 0)
				continue;
			if (busy[c]) {
				serve_busy_client(ports, n_ports, clients, busy, c);
				continue;
			}
			size_t p = 0;
			while (p < n_ports && (ports[p].state != PORT_GREETED || ports[p].client != PORT_FREE))
				p++;
			if (p == n_ports)
				continue; /* every greeted port taken: the rest wait for the next turn */
			size_t len = read_client_frame(clients[c]);
			if (len == 0) {
				close(clients[c]);
				clients[c] = -1;
			} else if (frame_type() != MSB_AGENT_INPUT && frame_type() != MSB_AGENT_RESIZE) {
				/* (INPUT or RESIZE sent as a streamed exec ended is late: dropped.) */
				to_port(ports[p].fd, len);
				ports[p].client = c;
				ports[p].id = frame_id();
				busy[c] = true;
			}
			next = (size_t)c + 1;
		}
		if (fds[0].revents & POLLIN) {
			int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
			for (size_t i = 0; c >= 0 && i < MAX_CLIENTS; i++)
				if (clients[i] < 0) {
					clients[i] = c;
					busy[i] = false;
					c = -1;
				}
			if (c >= 0)
				close(c);
		}
	}
}
