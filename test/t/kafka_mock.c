/*
 * kafka_mock.c: librdkafka's mock Kafka cluster (rdkafka_mock.h) for the
 * relay's test, 086_relay.pl.  Usage: kafka_mock [TOPIC:PARTITIONS]...
 * Starts a cluster of 3 brokers, creates the topics (librdkafka 2.0's mock
 * answers no CreateTopics), prints the bootstrap servers and runs until
 * standard input closes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

int
main(int argc, char **argv)
{
	char		errstr[512];
	char		buf[256];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk;
	rd_kafka_mock_cluster_t *mc;

	rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (rk == NULL)
	{
		fprintf(stderr, "kafka_mock: %s\n", errstr);
		return 1;
	}
	mc = rd_kafka_mock_cluster_new(rk, 3);
	if (mc == NULL)
	{
		fprintf(stderr, "kafka_mock: cannot start the mock cluster\n");
		return 1;
	}
	for (int i = 1; i < argc; i++)
	{
		char	   *colon = strrchr(argv[i], ':');

		if (colon == NULL)
			return 2;
		*colon = '\0';
		if (rd_kafka_mock_topic_create(mc, argv[i], atoi(colon + 1), 1))
		{
			fprintf(stderr, "kafka_mock: cannot create %s\n", argv[i]);
			return 1;
		}
	}
	printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
	fflush(stdout);
	while (fread(buf, 1, sizeof(buf), stdin) > 0)
		;
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return 0;
}
