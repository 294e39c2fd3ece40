/*
 * msb/observer.h — the seed's eight events, delivered to a host's callbacks (host API).
 * (Filled in by the router work: issue 3.)
 */
#ifndef MSB_OBSERVER_H
#define MSB_OBSERVER_H

typedef struct msb_observer msb_observer;

#endif
