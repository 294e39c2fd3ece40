/*
 * stand_in.h — the body of a stand-in agent (a shell script's last line) that accepts the
 * host's queued connection on listening fd FD, hangs up on it unanswered and lives on: what
 * a live agent refusing the greeting looks like to a backend's start.
 */
#ifndef MSB_STAND_IN_H
#define MSB_STAND_IN_H

#define STAND_IN_HANGS_UP(FD)                                                            \
	"exec /usr/bin/python3 -c 'import socket, time\n"                                \
	"c, _ = socket.socket(fileno=" #FD ").accept()\n"                                \
	"c.close()\n"                                                                    \
	"time.sleep(30)'"

#endif
