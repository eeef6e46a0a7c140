-- LISTEN/NOTIFY: channel names, the settings, and bad input.  Delivery
-- itself (what is announced, coalescing) is in test/t/013_notify.pl.

-- A channel is "eventlog." and the topic's name, which psql's LISTEN must
-- quote (the dot, and upper case letters).
SELECT left(t, 12) AS topic, length(t) AS topic_len, eventlog.channel(t) AS channel,
       octet_length(eventlog.channel(t)) AS channel_len
  FROM unnest(ARRAY['orders', 'Orders.v2', repeat('x', 54), repeat('x', 55), repeat('y', 200)]) t;

-- It depends on the name only: the channel of a topic that does not exist
-- (yet) is known, so one can LISTEN before it is created.
SELECT eventlog.channel('not-created-yet');

-- Bad input.
SELECT e.* FROM (VALUES
    ($$SELECT eventlog.channel(NULL)$$),
    ($$SELECT eventlog.channel('')$$),
    ($$SELECT eventlog.channel('bad name')$$),
    ($$SELECT eventlog.channel(repeat('z', 201))$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;

-- The settings, with their defaults.
SELECT name, setting, unit, context FROM pg_settings
 WHERE name IN ('eventlog.notify', 'eventlog.notify_interval') ORDER BY name;

-- poll's wait: bad values are refused before anything happens.
SELECT eventlog.create_topic('np', 1);
SELECT e.* FROM (VALUES
    ($$SELECT * FROM eventlog.poll('np', 'g', wait => '-1 second')$$),
    ($$SELECT * FROM eventlog.poll('np', 'g', wait => '2 days')$$),
    ($$SELECT * FROM eventlog.poll('np', 'g', member => 'm', session_timeout => '5 s', wait => '5 s')$$)
  ) AS v(sql), LATERAL expect_error(v.sql) e;
SELECT count(*) AS members FROM eventlog.group_members gm
  JOIN eventlog.topic_catalog t USING (topic_id) WHERE t.name = 'np';
SELECT eventlog.drop_topic('np');
