/* placeholder: the ABI header is written in the ABI issue */
#ifndef ANALYTICS_PLUGIN_H
#define ANALYTICS_PLUGIN_H
#endif
