// Every member of Engine<F>: included once per backend, by the file that instantiates
// the engine for it.
#pragma once

#include "engine/engine.h"
#include "engine/engine_close.h"
#include "engine/engine_connect.h"
#include "engine/engine_connect_retry.h"
#include "engine/engine_failure.h"
#include "engine/engine_recv.h"
#include "engine/engine_release.h"
#include "engine/engine_rndv.h"
#include "engine/engine_segment.h"
#include "engine/engine_send.h"
#include "engine/engine_setup.h"
#include "engine/engine_shared_receive.h"
#include "engine/engine_unexpected_bound.h"
