/* version.h — the xlatrain version, shared by --version, config.yaml's
 * header, results.json and checkpoints. Not here: the checkpoint format
 * version (checkpoint.c). */
#ifndef XT_VERSION_H
#define XT_VERSION_H

#define XT_VERSION "0.1.0"

#endif
